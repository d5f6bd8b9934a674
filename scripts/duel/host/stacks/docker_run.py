"""One job's command run inside an era's Docker image, recorded with the image that ran it.

It asks the engine for the image's ID (``docker image inspect``) and runs the command in a
container of exactly that ID: ``docker run --rm --init``, the job's working directory mounted
read-write at the same path (so every relative path of the job means the same inside), the
checkout and any ``--mount`` folder read-only at their own paths, no network, the caller's user and
group (no root-owned results), ``--cpuset-cpus`` = the same fixed CPUs a native cell binds to
(duel/cell/conditions.py; not ``--cpus``, a CFS quota that throttles in bursts), ``--gpus all``
for a cuda job.
With ``--record-image`` it appends ``--image NAME --image-digest ID`` to the command, so that the
shard names the image that produced it. The checkout's commit is handed in as DUEL_GIT_COMMIT
(the image has no git). A container that fails or is killed fails the job with a message saying
so; a job that is stopped stops its container; a container left behind by a killed earlier run
of the same job is removed before the new one starts. The workflow's jobs and a person run it
as ``duel image run --image ... -- COMMAND`` (the exit status is the container's).
"""
import argparse
import hashlib
import os
import signal
import subprocess
import sys

from duel.cell import conditions
from duel.cell.environment import git_commit
from duel.host.stacks import images

EXIT_MEANINGS = {
    125: "docker could not create or start the container (its message is above)",
    126: "the command could not be executed in the image",
    127: "the command was not found in the image",
    137: "the container was killed (SIGKILL: `docker kill`, the out-of-memory killer, or a "
         "stopped engine)",
    143: "the container was stopped (SIGTERM)",
}


def add_arguments(parser):
    """The options of a docker run, on this module's parser and on ``duel image run``'s."""
    parser.add_argument("--image", required=True, help="image name, e.g. duel/current-cpu:TAG")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, required=True, help="CPUs the container may use")
    parser.add_argument("--checkout", required=True, help="the Duel checkout (mounted read-only)")
    parser.add_argument("--mount", action="append", default=[],
                        help="another folder the command reads (read-only); repeatable")
    parser.add_argument("--record-image", action="store_true",
                        help="append --image NAME --image-digest ID to the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")


def check_command(parser, args):
    """The command after --, or the parser's error when none is given."""
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given (put it after --)")


def mounts(workdir, read_only):
    """``--volume`` options: ``workdir`` read-write, the others read-only, each at its own path.

    A folder inside a read-write one is already there and is left out; a read-only folder that
    holds the working directory is mounted, with the working directory mounted over it."""
    workdir = os.path.realpath(workdir)
    options = ["--volume", "%s:%s:rw" % (workdir, workdir)]
    seen = set()
    for folder in read_only:
        folder = os.path.realpath(folder)
        inside = folder == workdir or folder.startswith(workdir + os.sep)
        if inside or folder in seen or not os.path.isdir(folder):
            continue
        seen.add(folder)
        options += ["--volume", "%s:%s:ro" % (folder, folder)]
    return options


def container_name(workdir, command):
    """The same job in the same folder gets the same name, so a leftover can be found."""
    key = "\0".join([os.path.realpath(workdir)] + command).encode("utf-8")
    return "duel-" + hashlib.sha256(key).hexdigest()[:16]


def docker_run_command(args, image_id, name, workdir, commit):
    command = list(args.command)
    if args.record_image:
        command += ["--image", args.image, "--image-digest", image_id]
    options = ["docker", "run", "--rm", "--init", "--name", name, "--network", "none",
               "--user", "%d:%d" % (os.getuid(), os.getgid()),
               "--cpuset-cpus", conditions.describe_cpus(conditions.pinned_cpus(args.threads)),
               "--workdir", os.path.realpath(workdir),
               "--env", "HOME=/tmp", "--env", "USER=duel", "--env", "DUEL_GIT_COMMIT=" + commit]
    options += mounts(workdir, [args.checkout] + args.mount)
    if args.device == "cuda":
        options += ["--gpus", "all"]
    return options + [image_id] + command


def run(args):
    """Run ``args.command`` in ``args.image``; the container's exit status."""
    problem = images.engine_problem()
    if problem:
        raise images.ImageError("runner docker: the Docker engine cannot run containers: %s"
                                % problem)
    image_id = images.image_id(args.image)
    if image_id is None:
        raise images.ImageError("runner docker: image %s is not in the engine" % args.image)
    workdir = os.getcwd()
    name = container_name(workdir, args.command)
    images.docker("rm", "--force", name)  # a leftover of a killed earlier run of this job
    command = docker_run_command(args, image_id, name, workdir, git_commit())
    sys.stderr.write("image %s (%s), container %s\n$ %s\n"
                     % (args.image, image_id, name, " ".join(command)))
    sys.stderr.flush()
    process = subprocess.Popen(command)

    def stop(signum, frame):
        images.docker("kill", name)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    status = process.wait()
    if status != 0:
        meaning = EXIT_MEANINGS.get(status, "the command in the container failed")
        sys.stderr.write("duel image run: container %s of image %s ended with status %d: %s\n"
                         % (name, args.image, status, meaning))
    return status
