"""Making an era's image end to end: its base (made here where asked), a wheel cache, then
the engine's build (docker or apptainer). ``duel image build`` asks; image_build.py holds the
build context and the ``docker build``, python_base.py and wheel_cache.py their parts.
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from duel.host.stacks import image_build, images, python_base
from duel.host.stacks import wheel_cache as wheel_cache_module


@contextlib.contextmanager
def timed(log, what):
    """Log how long ``what`` took (the build's phases: base, wheels, image)."""
    start = time.time()
    yield
    log.write("duel image build: %s took %.0f s\n" % (what, time.time() - start))
    log.flush()


def _local_base(checkout, era, device, log):
    """The base --local-base builds on, made here unless the engine has it already."""
    declared = images.base_of(images.dockerfile(checkout, era, device))
    mirror = os.environ.get("DUEL_DEBIAN_MIRROR")
    python = python_base.python_version(declared)
    if python is not None:
        return python_base.make(python, log, mirror)
    suite = image_build.local_base_suite(declared)
    if suite is None:
        raise images.ImageError(
            "--local-base: the base of %s-%s (%s) is neither a Debian release that debootstrap "
            "can make nor an official Python image; bring that base in with `docker load` "
            "instead (containers/README.md)" % (era, device, declared))
    base = image_build.LOCAL_BASE_NAME % suite
    if images.image_id(base) is None:
        image_build.make_local_base(suite, log, mirror)
    return base


def _docker(checkout, era, device, name, base, local_base, wheels, wheel_cache, ca_bundle, lock,
            log):
    if local_base:
        with timed(log, "the base"):
            base = _local_base(checkout, era, device, log)
    if wheel_cache:
        lock_path = lock or os.path.join(checkout, images.lock_of(
            images.dockerfile(checkout, era, device)))
        with timed(log, "the wheel cache"):
            wheel_cache_module.fill(lock_path, wheel_cache, device, log)
        wheels = [wheel_cache] + list(wheels)
    with timed(log, "docker build"):
        return image_build.build_docker_image(checkout, era, device, name, base, wheels,
                                              ca_bundle, lock, log)


def _apptainer(checkout, era, device, target, base, local_base, wheels, ca_bundle, lock, log):
    engine = shutil.which("apptainer") or shutil.which("singularity")
    if engine is None:
        raise images.ImageError("--engine apptainer: apptainer (or singularity) is not installed")
    if base or local_base:
        raise images.ImageError("--engine apptainer takes its base from the definition's From: "
                                "line; without a registry, build the docker image first and "
                                "convert it (containers/README.md)")
    target = os.path.abspath(target)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="duel-build-") as folder:
        image_build.build_context(checkout, era, device, folder, wheels,
                                  ca_bundle or image_build.default_ca_bundle(), lock)
        words = [engine, "build", "--force", target, "apptainer.def"]
        log.write("$ %s  (in %s)\n" % (" ".join(words), folder))
        log.flush()
        subprocess.run(words, cwd=folder, check=True)
    return images.file_digest(target)


def build(checkout, era, device, engine="docker", name=None, base=None, local_base=False,
          wheels=None, wheel_cache=None, ca_bundle=None, lock=None, log=sys.stderr):
    """Make the image of ``era`` and ``device`` with ``engine``: (its name or .sif path, its ID
    or digest). ImageError where a base or the engine cannot be had here."""
    name = name or images.default_image(checkout, era, device, engine)
    wheels = wheels or image_build.default_wheel_folders()
    if engine == "docker":
        return name, _docker(checkout, era, device, name, base, local_base, wheels, wheel_cache,
                             ca_bundle, lock, log)
    return name, _apptainer(checkout, era, device, name, base, local_base, wheels, ca_bundle,
                            lock, log)
