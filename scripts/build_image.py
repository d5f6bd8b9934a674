#!/usr/bin/env python
"""Build the image of an era and device from containers/ and its lock file in envs/.

    python scripts/build_image.py current cpu                 # base from a registry
    python scripts/build_image.py current cpu --local-base    # no registry: Debian via debootstrap
    python scripts/build_image.py hf2019 cpu --local-base --wheel-cache ~/.cache/duel-wheels
    python scripts/build_image.py current cpu --engine apptainer

The image gets the name the workflow looks for, ``duel/<era>-<device>:<tag>`` (the tag is made
from the Dockerfile and the lock file), unless --name says otherwise. The build context holds the
lock file, wheels of pinned packages found on this machine's disk (pip's find-links, or --wheels;
e.g. the CPU build of torch), and the CA bundle this machine's pip trusts; the build runs with
host networking, so pip inside reaches the registry as this machine does. With --local-base, a
Debian-based image is built on ``duel/debian:<release>``, made here by ``debootstrap
--variant=minbase`` and ``docker import`` when the engine does not have it yet, and an image on an
official ``python:X.Y`` base (hf2019-cpu) on ``duel/python:<X.Y.Z>-bookworm``: Debian bookworm and
this machine's Python X.Y in /usr/local (stacks/python_base.py). --wheel-cache DIR keeps a wheel
of every pin of the lock file in DIR (fetched once by the era's Python) and builds from it.
With --engine apptainer the same context is built into a .sif from containers/<era>-<device>.def.
"""
import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.path.dirname(os.path.abspath(__file__))  # holds duel/
sys.path.insert(0, SCRIPTS)
CHECKOUT = os.path.dirname(SCRIPTS)

from duel.host.stacks import image_build, images, python_base, wheel_cache  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("era", help="e.g. current, hf2019")
    parser.add_argument("device", choices=["cpu", "cuda"])
    parser.add_argument("--engine", choices=["docker", "apptainer"], default="docker")
    parser.add_argument("--name", help="image name (docker) or .sif path (apptainer); "
                                       "default: the one the workflow looks for")
    bases = parser.add_mutually_exclusive_group()
    bases.add_argument("--base", help="build on this image instead of the Dockerfile's BASE")
    bases.add_argument("--local-base", action="store_true",
                       help="build on a Debian base made here with debootstrap (docker only)")
    parser.add_argument("--wheels", action="append",
                        help="folder of wheels to take pinned packages from (repeatable; "
                             "default: this machine's pip find-links)")
    parser.add_argument("--wheel-cache",
                        help="folder that keeps a wheel of every pin of the lock file: filled "
                             "with those it lacks (by the era's Python), then built from")
    parser.add_argument("--ca-bundle", help="CA bundle for pip in the build (default: pip's)")
    parser.add_argument("--lock", help="install this lock file instead of the Dockerfile's (e.g. a "
                                       "subset for a small test image; needs --name)")
    args = parser.parse_args(argv)
    if args.lock and not args.name:
        parser.error("--lock builds another image than the workflow's: give it a --name")
    return args


@contextlib.contextmanager
def timed(log, what):
    """Log how long ``what`` took (the build's phases: base, wheels, image)."""
    start = time.time()
    yield
    log.write("build_image: %s took %.0f s\n" % (what, time.time() - start))
    log.flush()


def local_base(args, log):
    """The base --local-base builds on, made here unless the engine has it already."""
    declared = images.base_of(images.dockerfile(CHECKOUT, args.era, args.device))
    mirror = os.environ.get("DUEL_DEBIAN_MIRROR")
    python = python_base.python_version(declared)
    if python is not None:
        return python_base.make(python, log, mirror)
    suite = image_build.local_base_suite(declared)
    if suite is None:
        raise images.ImageError(
            "--local-base: the base of %s-%s (%s) is neither a Debian release that debootstrap "
            "can make nor an official Python image; bring that base in with `docker load` "
            "instead (containers/README.md)" % (args.era, args.device, declared))
    base = image_build.LOCAL_BASE_NAME % suite
    if images.image_id(base) is None:
        image_build.make_local_base(suite, log, mirror)
    return base


def build_docker(args, log=sys.stderr):
    name = args.name or images.default_image(CHECKOUT, args.era, args.device, "docker")
    base = args.base
    if args.local_base:
        with timed(log, "the base"):
            base = local_base(args, log)
    wheels = args.wheels or image_build.default_wheel_folders()
    if args.wheel_cache:
        lock = args.lock or os.path.join(
            CHECKOUT, images.lock_of(images.dockerfile(CHECKOUT, args.era, args.device)))
        with timed(log, "the wheel cache"):
            wheel_cache.fill(lock, args.wheel_cache, args.device, log)
        wheels = [args.wheel_cache] + list(wheels)
    with timed(log, "docker build"):
        found = image_build.build_docker_image(
            CHECKOUT, args.era, args.device, name, base, wheels, args.ca_bundle, args.lock, log)
    print("%s %s" % (name, found))


def build_apptainer(args, log=sys.stderr):
    engine = shutil.which("apptainer") or shutil.which("singularity")
    if engine is None:
        raise images.ImageError("--engine apptainer: apptainer (or singularity) is not installed")
    if args.base or args.local_base:
        raise images.ImageError("--engine apptainer takes its base from the definition's From: "
                                "line; without a registry, build the docker image first and "
                                "convert it (containers/README.md)")
    target = os.path.abspath(args.name or images.default_image(
        CHECKOUT, args.era, args.device, "apptainer"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duel-build-") as folder:
        image_build.build_context(CHECKOUT, args.era, args.device, folder,
                             args.wheels or image_build.default_wheel_folders(),
                             args.ca_bundle or image_build.default_ca_bundle(), args.lock)
        command = [engine, "build", "--force", target, "apptainer.def"]
        log.write("$ %s  (in %s)\n" % (" ".join(command), folder))
        log.flush()
        subprocess.run(command, cwd=folder, check=True)
    print("%s %s" % (target, images.file_digest(target)))


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.engine == "docker":
            build_docker(args)
        else:
            build_apptainer(args)
    except (images.ImageError, subprocess.CalledProcessError) as error:
        sys.stderr.write("build_image: %s\n" % error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
