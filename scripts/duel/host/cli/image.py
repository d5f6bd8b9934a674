"""``duel image build`` and ``duel image run``: an era's image made, a command run in one."""
import os
import subprocess

from duel.host.cli import command
from duel.host.stacks import build_image, docker_run, images

BUILD = """Build the image of an era and device.

From containers/ and the era's lock file in envs/.
The image gets the name the workflow looks for, duel/<era>-<device>:<tag> (the tag is made from
the Dockerfile and the lock file), unless --name says otherwise. The build context holds the lock
file, wheels of pinned packages found on this machine's disk (pip's find-links, or --wheels; e.g.
the CPU build of torch), and the CA bundle this machine's pip trusts; the build runs with host
networking, so pip inside reaches the registry as this machine does. With --local-base, a
Debian-based image is built on duel/debian:<release>, made here by debootstrap --variant=minbase
and docker import when the engine does not have it yet, and an image on an official python:X.Y
base (hf2019-cpu) on duel/python:<X.Y.Z>-bookworm: Debian bookworm and this machine's Python X.Y
in /usr/local (stacks/python_base.py). --wheel-cache DIR keeps a wheel of every pin of the lock
file in DIR (fetched once by the era's Python) and builds from it. With --engine apptainer the
same context is built into a .sif from containers/<era>-<device>.def. Prints the image's name and
ID (or the .sif's path and digest)."""

RUN = """Run a command inside an era's Docker image.

As the workflow's runner docker does.
The container runs exactly the image's ID, with no network, as the caller's user, on the fixed
CPUs a native cell binds to; the working folder is mounted read-write at its own path, the
checkout and each --mount folder read-only (stacks/docker_run.py). The exit status is the
command's own (docker's 125-127, 137 and 143 are explained on stderr); the codes below are
those of duel itself."""


def add(subparsers):
    parser = command.add(subparsers, "image", "Build an era's image, or run a command in one.",
                         {command.FINE: None, command.BAD_INPUT: None, command.FAILED: None},
                         ["duel image build current cpu --local-base",
                          "duel image run --image duel/current-cpu:TAG --threads 2 "
                          "--checkout . -- python -V"])
    verbs = parser.add_subparsers(dest="verb", metavar="{build,run}", required=True)
    build = command.add(
        verbs, "build", BUILD,
        {command.FINE: "the image is built", command.BAD_INPUT: "bad input, or a base or engine "
                                                                "that cannot be had here (what "
                                                                "to do instead is named)",
         command.FAILED: "the build itself failed (its output is above)"},
        ["duel image build current cpu                 # base from a registry",
         "duel image build current cpu --local-base    # no registry: Debian via debootstrap",
         "duel image build hf2019 cpu --local-base --wheel-cache ~/.cache/duel-wheels",
         "duel image build current cpu --engine apptainer"])
    build.add_argument("era", help="e.g. current, hf2019")
    build.add_argument("device", choices=["cpu", "cuda"])
    build.add_argument("--engine", choices=["docker", "apptainer"], default="docker")
    build.add_argument("--name", help="image name (docker) or .sif path (apptainer); "
                                      "default: the one the workflow looks for")
    bases = build.add_mutually_exclusive_group()
    bases.add_argument("--base", help="build on this image instead of the Dockerfile's BASE")
    bases.add_argument("--local-base", action="store_true",
                       help="build on a Debian base made here with debootstrap (docker only)")
    build.add_argument("--wheels", action="append", metavar="DIR",
                       help="folder of wheels to take pinned packages from (repeatable, one "
                            "folder each; default: this machine's pip find-links)")
    build.add_argument("--wheel-cache", metavar="DIR",
                       help="folder that keeps a wheel of every pin of the lock file: filled "
                            "with those it lacks (by the era's Python), then built from")
    build.add_argument("--ca-bundle", help="CA bundle for pip in the build (default: pip's)")
    build.add_argument("--lock", help="install this lock file instead of the Dockerfile's (e.g. "
                                      "a subset for a small test image; needs --name)")
    build.set_defaults(func=run_build, check=check_build)
    running = command.add(
        verbs, "run", RUN,
        {command.FINE: "the command ran and exited 0; else its own exit status",
         command.BAD_INPUT: "bad input, or the engine or the image is not here (before any "
                            "container starts)"},
        ["duel image run --image duel/current-cpu:TAG --threads 2 --checkout . -- python -V"])
    docker_run.add_arguments(running)
    running.set_defaults(func=run_in_image, check=docker_run.check_command)


def check_build(parser, args):
    if args.lock and not args.name:
        parser.error("--lock builds another image than the workflow's: give it a --name")
    if not os.path.isfile(images.dockerfile(command.CHECKOUT, args.era, args.device)):
        parser.error("no era %r with device %s: containers/ has no %s-%s.Dockerfile"
                     % (args.era, args.device, args.era, args.device))


def run_build(args):
    try:
        name, found = build_image.build(
            command.CHECKOUT, args.era, args.device, args.engine, name=args.name, base=args.base,
            local_base=args.local_base, wheels=args.wheels, wheel_cache=args.wheel_cache,
            ca_bundle=args.ca_bundle, lock=args.lock)
    except images.ImageError as error:
        raise command.Refusal(str(error))
    except subprocess.CalledProcessError as error:
        raise command.Failure(str(error))
    print("%s %s" % (name, found))
    return command.FINE


def run_in_image(args):
    try:
        return docker_run.run(args)
    except images.ImageError as error:
        raise command.Refusal(str(error))
