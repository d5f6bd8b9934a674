"""A folder of wheels for every pin of a lock file, filled once and reused by image builds.

An era's image installs its lock file with pip in the build; the 2019 lock alone is about 930 MB
of wheels (torch 1.3.0's is 773 MB). ``scripts/build_image.py --wheel-cache DIR`` fills ``DIR``
with the lock's pins that it lacks, by ``pip wheel --no-deps`` run with the era's own Python (so
wheels are chosen for that interpreter, and the few packages published only as source are built
into wheels once), then puts the wheels into the build context like any local wheel: a later
build downloads nothing big. Files arrive in a temporary folder beside ``DIR`` and are moved in
whole, so an interrupted fill never leaves a truncated wheel behind.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from packaging.utils import canonicalize_name, parse_wheel_filename

from duel.cell import locks
from duel.host import eras, image_build, images


def missing_pins(lock_path, folder, device):
    """``name==version`` lines of the lock whose wheel (for its Python and device) is not in
    ``folder``."""
    python = images.python_of(lock_path)
    have = {canonicalize_name(parse_wheel_filename(os.path.basename(path))[0])
            for path in image_build.local_wheels(lock_path, [folder], python, device)}
    return ["%s==%s" % (name, version)
            for name, version in sorted(locks.read_pins(lock_path).items())
            if name not in have]


def fill(lock_path, folder, device, log=sys.stderr):
    """Put a wheel of every pin of ``lock_path`` into ``folder`` (those it lacks are fetched with
    the era's Python); returns the pins that were fetched."""
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
        with open(requirements, "w") as handle:
            handle.write("\n".join(missing) + "\n")
        command = [interpreter, "-m", "pip", "wheel", "--no-deps", "--use-pep517",
                   "--disable-pip-version-check", "--progress-bar", "off", "-r", requirements,
                   "-w", os.path.join(staging, "wheels")]
        log.write("$ %s  (%d pins missing from %s)\n" % (" ".join(command), len(missing), folder))
        log.flush()
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            raise images.ImageError("pip wheel for the cache %s failed (status %d)"
                                    % (folder, result.returncode))
        for name in sorted(os.listdir(os.path.join(staging, "wheels"))):
            os.replace(os.path.join(staging, "wheels", name), os.path.join(folder, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    still = missing_pins(lock_path, folder, device)
    if still:
        raise images.ImageError("the wheel cache %s still lacks %s" % (folder, ", ".join(still)))
    return missing
