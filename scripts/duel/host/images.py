"""Era images: which image a cell runs in, whether the engine has it, and how one is built.

Every era x device has a Dockerfile and an Apptainer definition in containers/
(``<era>-<device>.Dockerfile``, ``<era>-<device>.def``). Each installs exactly one lock file of
envs/ (named on its ``COPY envs/...`` line, resp. in its ``%files``) on a base image pinned by
tag, and by digest where one is known. The default image name carries a tag made from the
contents of the recipe and the lock file, ``duel/<era>-<device>:<tag>``, so a changed lock file
or Dockerfile names a new image, and planning asks for it to be built instead of running cells in
a stale one.

Without a registry, a Debian-based image is built on a base made locally from Debian's packages:
``debootstrap --variant=minbase bookworm DIR``, then ``tar -C DIR -c . | docker import``.
"""
import hashlib
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from duel.cell import files, locks

CONTAINERS = "containers"
ENGINE_TIMEOUT_S = 30
LOCK_LINE = re.compile(r"^COPY\s+(envs/\S+\.txt)\s", re.MULTILINE)
BASE_LINE = re.compile(r"^ARG\s+BASE=(\S+)\s*$", re.MULTILINE)
# Bases a locally made Debian image can stand in for: the same release, the same packages.
LOCAL_BASES = {"bookworm": re.compile(r"^debian:(12([.-]|$)|bookworm)")}
LOCAL_BASE_NAME = "duel/debian:%s"
NO_INDEX_ARG = "PIP_NO_INDEX"


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
    lock file it installs."""
    path = dockerfile(checkout, era, device)
    recipe = definition(checkout, era, device) if runner == "apptainer" else path
    digest = hashlib.sha256()
    for part in (recipe, os.path.join(checkout, lock_of(path))):
        with open(part, "rb") as handle:
            digest.update(handle.read())
        digest.update(b"\0")
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
    command = "python scripts/build_image.py %s %s" % (era, device)
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


# Building: a context with the Dockerfile, its lock file, wheels from this disk and a CA bundle.

def pinned_versions(lock_path):
    """{canonical name: version} of every ``name==version`` line of a lock file."""
    pins = {}
    for line in _read(lock_path).splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonicalize_name(name.split("[", 1)[0])] = version.split()[0].rstrip("\\")
    return pins


def local_wheels(lock_path, folders, python, device):
    """Wheels in ``folders`` that are a pinned version of a package of the lock file, built for
    ``python`` (major, minor) and ``device``: a local label ``+cpu`` only for cpu, ``+cuXYZ``
    only for cuda (pip prefers a labelled wheel, so a CPU torch would end up in a CUDA image)."""
    pins = pinned_versions(lock_path)
    interpreters = {"cp%d%d" % python, "py%d%d" % python, "py%d" % python[0]}
    other = re.compile(r"^cu\d+" if device == "cpu" else r"^cpu")
    found = []
    for folder in folders:
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not name.endswith(".whl"):
                continue
            project, version, _, tags = parse_wheel_filename(name)
            wanted = pins.get(canonicalize_name(project))
            if wanted and version.public == Version(wanted).public and any(
                    tag.interpreter in interpreters for tag in tags) and not other.match(
                    version.local or ""):
                found.append(os.path.join(folder, name))
    return found


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
    have = {canonicalize_name(parse_wheel_filename(os.path.basename(w))[0]) for w in wheels}
    return set(pinned_versions(lock_path)) <= have


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
                   "--label", "duel.lock-sha256=%s" % file_digest(lock),
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
