"""Era images at planning time: which image a cell runs in and whether the engine has it.

Every era x device has a Dockerfile and an Apptainer definition in containers/
(``<era>-<device>.Dockerfile``, ``<era>-<device>.def``). Each installs exactly one lock file of
envs/ (named on its ``COPY envs/...`` line, resp. in its ``%files``) on a base image pinned by
tag, and by digest where one is known. The default image name carries a tag made from the
contents of the recipe and the lock file, ``duel/<era>-<device>:<tag>``, so a changed lock file
or Dockerfile names a new image, and planning asks for it to be built instead of running cells in
a stale one. Building one is image_build.py.

Without a registry, a Debian-based image is built on a base made locally from Debian's packages:
``debootstrap --variant=minbase bookworm DIR``, then ``tar -C DIR -c . | docker import``.
"""
import hashlib
import os
import re
import subprocess

from duel.cell import files, locks

CONTAINERS = "containers"
ENGINE_TIMEOUT_S = 30
LOCK_LINE = re.compile(r"^COPY\s+(envs/\S+\.txt)\s", re.MULTILINE)
BASE_LINE = re.compile(r"^ARG\s+BASE=(\S+)\s*$", re.MULTILINE)


class ImageError(ValueError):
    """An image that cannot be found, built or run; the message says what to do."""


def image_key(era, device):
    return "%s-%s" % (era, device)


def dockerfile(checkout, era, device):
    return os.path.join(checkout, CONTAINERS, image_key(era, device) + ".Dockerfile")


def definition(checkout, era, device):
    """The Apptainer definition file of an era and device."""
    return os.path.join(checkout, CONTAINERS, image_key(era, device) + ".def")


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        raise ImageError("%s is missing: no image is defined for it" % path)


def lock_of(dockerfile_path):
    """The lock file (``envs/...``, relative to the checkout) a Dockerfile installs."""
    locks = LOCK_LINE.findall(_read(dockerfile_path))
    if len(locks) != 1:
        raise ImageError("%s must COPY exactly one envs/*.txt lock file, found %s"
                         % (dockerfile_path, locks or "none"))
    return locks[0]


def base_of(dockerfile_path):
    """The pinned base image of a Dockerfile (the default of its ``ARG BASE=``)."""
    match = BASE_LINE.search(_read(dockerfile_path))
    if not match:
        raise ImageError("%s has no 'ARG BASE=<image>:<tag>' line" % dockerfile_path)
    return match.group(1)


def python_of(lock_path):
    """The (major, minor) Python of an image, from its lock file's requires-python line."""
    version = locks.required_python(lock_path)
    if not version:
        raise ImageError("%s has no '# requires-python: X.Y' line" % lock_path)
    return tuple(int(part) for part in version.split("."))


def content_tag(checkout, era, device, runner="docker"):
    """12 hex digits of SHA-256 over the recipe (Dockerfile, or the Apptainer definition) and the
    identity of the lock file it installs (its pins: locks.lock_sha256)."""
    path = dockerfile(checkout, era, device)
    recipe = definition(checkout, era, device) if runner == "apptainer" else path
    digest = hashlib.sha256()
    with open(recipe, "rb") as handle:
        digest.update(handle.read())
    digest.update(b"\0")
    digest.update(locks.lock_sha256(os.path.join(checkout, lock_of(path))).encode("ascii"))
    return digest.hexdigest()[:12]


def default_image(checkout, era, device, runner):
    """docker: ``duel/<era>-<device>:<tag>``; apptainer: ``containers/sif/<era>-<device>-<tag>.sif``
    in the checkout."""
    tag = content_tag(checkout, era, device, runner)
    if runner == "apptainer":
        name = "%s-%s.sif" % (image_key(era, device), tag)
        return os.path.join(checkout, CONTAINERS, "sif", name)
    return "duel/%s:%s" % (image_key(era, device), tag)


def image_for(config, checkout, era, device, runner):
    """The image a job of ``era`` on ``device`` runs in: config key ``images``, else the default.

    For apptainer, a name without ``://`` is a .sif file; relative ones are taken from the checkout.
    """
    chosen = (config.get("images") or {}).get(image_key(era, device))
    if not chosen:
        return default_image(checkout, era, device, runner)
    if runner == "apptainer" and "://" not in chosen and not os.path.isabs(chosen):
        return os.path.join(checkout, chosen)
    return chosen


def build_hint(era, device, runner):
    """The command that builds the default image of an era and device."""
    command = ".venv/bin/duel image build %s %s" % (era, device)
    if runner == "apptainer":
        command += " --engine apptainer"
    return ("build it with `%s` (add --local-base where no registry is reachable; "
            "containers/README.md)" % command)


# The Docker engine, asked through its own client.

def docker(*args, **kwargs):
    """``docker ARGS`` with output captured; raises ImageError when the client is missing."""
    kwargs.setdefault("timeout", ENGINE_TIMEOUT_S)
    try:
        return subprocess.run(("docker",) + args, capture_output=True, text=True, **kwargs)
    except FileNotFoundError:
        raise ImageError("the docker client is not installed (no `docker` on PATH)")


def engine_problem():
    """Why the Docker engine cannot run containers now, or None when it answers."""
    try:
        answer = docker("version", "--format", "{{.Server.Version}}")
    except subprocess.TimeoutExpired:
        return "the engine did not answer `docker version` within %d s" % ENGINE_TIMEOUT_S
    except ImageError as error:
        return str(error)
    if answer.returncode != 0 or not answer.stdout.strip():
        lines = (answer.stderr or answer.stdout).strip().splitlines()
        return "`docker version` failed: %s" % (lines[-1].rstrip(".") if lines
                                                 else answer.returncode)
    return None


def image_id(name):
    """The engine's ID (``sha256:...``) of a local image, or None when it has no such image."""
    answer = docker("image", "inspect", "--format", "{{.Id}}", name)
    if answer.returncode == 0:
        return answer.stdout.strip()
    if "no such image" in answer.stderr.lower():
        return None
    raise ImageError("`docker image inspect %s` failed: %s" % (name, answer.stderr.strip()))


def file_digest(path):
    """``sha256:<hex>`` of a file (an Apptainer .sif is identified by its content)."""
    return "sha256:" + files.file_sha256(path)
