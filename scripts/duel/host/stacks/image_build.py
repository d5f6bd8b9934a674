"""Building an era's image: the build context (Dockerfile, lock file, wheels from this disk, a
CA bundle), a Debian base made here without a registry, and the ``docker build`` itself.

Planning (which image a cell runs in, whether the engine has it) is images.py; this module is
only used where an image is made: ``duel image build``, the wheel cache and the Python base.
"""
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from duel.cell import locks

from duel.host.stacks.images import (ImageError, _read, base_of, definition, dockerfile,
                                     image_id, lock_of, python_of)

# Bases a locally made Debian image can stand in for: the same release, the same packages.
LOCAL_BASES = {"bookworm": re.compile(r"^debian:(12([.-]|$)|bookworm)")}
LOCAL_BASE_NAME = "duel/debian:%s"
NO_INDEX_ARG = "PIP_NO_INDEX"
SOURCE_ARCHIVES = (".tar.gz", ".zip")


# Building: a context with the Dockerfile, its lock file, wheels from this disk and a CA bundle.

def local_wheels(lock_path, folders, python, device):
    """Files in ``folders`` that are a pinned version of a package of the lock file: wheels built
    for ``python`` (major, minor) and ``device`` (a local label ``+cpu`` only for cpu, ``+cuXYZ``
    only for cuda: pip prefers a labelled wheel, so a CPU torch would end up in a CUDA image), and
    source archives (the lock of a package published only as source hashes its archive: pip
    builds it in the image, and the wheel cache keeps the archive, not a wheel built here)."""
    pins = locks.read_pins(lock_path)
    interpreters = {"cp%d%d" % python, "py%d%d" % python, "py%d" % python[0]}
    # A stable-ABI wheel (abi3) of CPython X.Y runs on every later X.Z.
    stable = {"cp%d%d" % (python[0], minor) for minor in range(2, python[1] + 1)}
    other = re.compile(r"^cu\d+" if device == "cpu" else r"^cpu")
    found = []
    for folder in folders:
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.endswith(".whl"):
                project, version, _, tags = parse_wheel_filename(name)
                fits = any(tag.interpreter in interpreters or (
                    tag.abi == "abi3" and tag.interpreter in stable) for tag in tags) and \
                    not other.match(version.local or "")
            elif name.endswith(SOURCE_ARCHIVES):
                project, version = parse_sdist_filename(name)
                fits = True
            else:
                continue
            wanted = pins.get(canonicalize_name(project))
            if fits and wanted and version.public == Version(wanted).public:
                found.append(os.path.join(folder, name))
    return found


def project_of(path):
    """The canonical project name of a wheel or source archive file."""
    name = os.path.basename(path)
    parse = parse_wheel_filename if name.endswith(".whl") else parse_sdist_filename
    return canonicalize_name(parse(name)[0])


def pip_setting(key):
    """A setting of this machine's pip (environment first, then its config files), or ''."""
    value = os.environ.get("PIP_" + key.upper().replace("-", "_"), "")
    if value:
        return value
    answer = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global." + key],
                            capture_output=True, text=True)
    return answer.stdout.strip() if answer.returncode == 0 else ""


def default_wheel_folders():
    """Local folders this machine's pip takes wheels from (its find-links)."""
    return [folder for folder in pip_setting("find-links").split()
            if "://" not in folder and os.path.isdir(folder)]


def default_ca_bundle():
    """The CA bundle this machine's pip trusts (PIP_CERT / pip config), else the system's."""
    for candidate in (pip_setting("cert"), ssl.get_default_verify_paths().cafile,
                      "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return candidate
    raise ImageError("no CA bundle found for pip in the build; pass --ca-bundle")


def _link_or_copy(source, target):
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def build_context(checkout, era, device, folder, wheel_folders, ca_bundle, lock_path=None):
    """Lay out the files a Dockerfile or definition COPYs: the lock file (``lock_path`` in its
    place if given, e.g. a subset for a small test image) and build/ (wheels, CA bundle).
    Returns the wheels put in."""
    path = dockerfile(checkout, era, device)
    lock = lock_of(path)
    lock_path = lock_path or os.path.join(checkout, lock)
    os.makedirs(os.path.join(folder, os.path.dirname(lock)), exist_ok=True)
    shutil.copy2(lock_path, os.path.join(folder, lock))
    shutil.copy2(path, os.path.join(folder, "Dockerfile"))
    shutil.copy2(definition(checkout, era, device), os.path.join(folder, "apptainer.def"))
    wheels_dir = os.path.join(folder, "build", "wheels")
    os.makedirs(wheels_dir, exist_ok=True)
    wheels = local_wheels(lock_path, wheel_folders, python_of(lock_path), device)
    for wheel in wheels:
        _link_or_copy(wheel, os.path.join(wheels_dir, os.path.basename(wheel)))
    shutil.copy2(ca_bundle, os.path.join(folder, "build", "ca-certificates.crt"))
    return wheels


def local_base_suite(base):
    """The Debian release a locally made base can stand in for, or None."""
    for suite, pattern in LOCAL_BASES.items():
        if pattern.match(base):
            return suite
    return None


def make_local_base(suite, log=sys.stderr, mirror=None):
    """Import a minimal Debian ``suite`` made here by debootstrap as ``duel/debian:<suite>``.

    Nothing comes from an image registry: debootstrap takes Debian's packages from the mirror
    this machine's debootstrap uses by default (or ``mirror``). Returns the image name.
    """
    name = LOCAL_BASE_NAME % suite
    if shutil.which("debootstrap") is None:
        raise ImageError("making a local base needs debootstrap (apt-get install debootstrap)")
    root = tempfile.mkdtemp(prefix="duel-rootfs-")
    try:
        command = ["debootstrap", "--variant=minbase", suite, root] + ([mirror] if mirror else [])
        log.write("$ %s\n" % " ".join(command))
        log.flush()
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in os.listdir(os.path.join(root, cache)):
                target = os.path.join(root, cache, entry)
                if os.path.isfile(target) and entry not in ("lock",):
                    os.remove(target)
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "--change", 'CMD ["/bin/bash"]', "-", name],
                                  stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise ImageError("docker import of %s failed: %s" % (name, imported.stderr.strip()))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return name


def offline_install(dockerfile_path, lock_path, wheels):
    """Whether the build's pip may skip the registry: the Dockerfile takes ``ARG PIP_NO_INDEX``
    and ``wheels`` hold every pin of the lock file (pip would take the registry's copy of a wheel
    it also finds in the context, downloading it again)."""
    if not re.search(r"^ARG\s+%s\s*$" % NO_INDEX_ARG, _read(dockerfile_path), re.MULTILINE):
        return False
    have = {project_of(path) for path in wheels}
    return set(locks.read_pins(lock_path)) <= have


def build_docker_image(checkout, era, device, name, base=None, wheel_folders=(), ca_bundle=None,
                       lock_path=None, log=sys.stderr):
    """Build an era's image with the engine (host networking, so the build reaches the registries
    as this machine does); returns its ID."""
    path = dockerfile(checkout, era, device)
    lock = lock_path or os.path.join(checkout, lock_of(path))
    with tempfile.TemporaryDirectory(prefix="duel-build-") as folder:
        wheels = build_context(checkout, era, device, folder, wheel_folders,
                               ca_bundle or default_ca_bundle(), lock)
        log.write("context %s: %s, wheels from this disk: %s\n"
                  % (folder, os.path.relpath(lock, checkout),
                     ", ".join(os.path.basename(w) for w in wheels) or "none"))
        command = ["docker", "build", "--network", "host", "--tag", name,
                   "--label", "duel.era=%s" % era, "--label", "duel.device=%s" % device,
                   "--label", "duel.lock-sha256=%s" % locks.lock_sha256(lock),
                   "--label", "duel.base=%s" % (base or base_of(path))]
        if base:
            command += ["--build-arg", "BASE=%s" % base]
        if offline_install(path, lock, wheels):
            command += ["--build-arg", "%s=1" % NO_INDEX_ARG]
        log.write("$ %s %s\n" % (" ".join(command), folder))
        log.flush()
        result = subprocess.run(command + [folder], stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise ImageError("docker build of %s failed (status %d)" % (name, result.returncode))
    return image_id(name)
