"""A folder holding a file of every pin of a lock file, filled once and reused by image builds.

An era's image installs its lock file with pip in the build; the 2019 lock alone is about 930 MB
of wheels (torch 1.3.0's is 773 MB). ``duel image build --wheel-cache DIR`` fills ``DIR``
with the lock's pins that it lacks, by ``pip download --no-deps`` run with the era's own Python
(so wheels are chosen for that interpreter) and checked against the lock's hashes: exactly the
files the lock names, a wheel where the pin has one for that Python and the source archive of a
package published only as source (gast 0.2.2, sacremoses 0.0.53), which pip builds in the image.
A wheel built here from such an archive would not do: its hash is not the lock's, and the image
installs with hash checking. The files go into the build context like any local wheel: a later
build downloads nothing big. They arrive in a temporary folder beside ``DIR`` and are moved in
whole, so an interrupted fill never leaves a truncated file behind.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from duel.cell import files, locks
from duel.host.stacks import eras, image_build, images


def sorted_files(lock_path, folder, device):
    """(allowed, stray): the files of ``folder`` that are a pin of the lock (a wheel for its Python
    and device, or a source archive), split by whether their SHA-256 is one the lock allows for
    that pin (a pin the lock gives no hash for allows any file)."""
    hashes = locks.read_hashes(lock_path)
    allowed, stray = [], []
    for path in image_build.local_wheels(lock_path, [folder], images.python_of(lock_path), device):
        wanted = hashes.get(image_build.project_of(path))
        (allowed if not wanted or files.file_sha256(path) in wanted else stray).append(path)
    return allowed, stray


def missing_pins(lock_path, folder, device):
    """``name==version`` lines of the lock without a file in ``folder`` that the lock allows."""
    have = {image_build.project_of(path) for path in sorted_files(lock_path, folder, device)[0]}
    return ["%s==%s" % (name, version)
            for name, version in sorted(locks.read_pins(lock_path).items())
            if name not in have]


def fill(lock_path, folder, device, log=sys.stderr):
    """Put a file of every pin of ``lock_path`` into ``folder`` (those it lacks are fetched with
    the era's Python), after removing the files of pins that the lock does not allow (e.g. a
    wheel an older fill built here); returns the pins that were fetched."""
    for path in sorted_files(lock_path, folder, device)[1]:
        log.write("wheel cache: removing %s (not a file the lock allows)\n" % path)
        os.remove(path)
    missing = missing_pins(lock_path, folder, device)
    if not missing:
        return []
    version = "%d.%d" % images.python_of(lock_path)
    try:
        interpreter = eras.find_python(version)
    except eras.EraError as error:
        raise images.ImageError("filling the wheel cache %s: %s" % (folder, error))
    os.makedirs(folder, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".fill-", dir=folder)
    try:
        requirements = os.path.join(staging, "requirements.txt")
        hashes = locks.read_hashes(lock_path)
        with open(requirements, "w") as handle:
            for pin in missing:
                allowed = hashes.get(locks.canonical(pin.split("==")[0]), [])
                handle.write(" ".join([pin] + ["--hash=sha256:" + h for h in allowed]) + "\n")
        command = [interpreter, "-m", "pip", "download", "--no-deps", "--no-build-isolation",
                   "--disable-pip-version-check", "--progress-bar", "off", "-r", requirements,
                   "-d", os.path.join(staging, "wheels")]
        log.write("$ %s  (%d pins missing from %s)\n" % (" ".join(command), len(missing), folder))
        log.flush()
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            raise images.ImageError("pip wheel for the cache %s failed (status %d)"
                                    % (folder, result.returncode))
        files.move_into(os.path.join(staging, "wheels"), folder,
                        sorted(os.listdir(os.path.join(staging, "wheels"))))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    still = missing_pins(lock_path, folder, device)
    if still:
        raise images.ImageError("the wheel cache %s still lacks %s" % (folder, ", ".join(still)))
    return missing
