"""A stand-in for an official ``python:X.Y`` base image, made on this machine without a registry.

The 2019 CPU image starts from ``python:3.7.16-slim-bullseye``. Where no image registry is
reachable, ``duel image build hf2019 cpu --local-base`` builds it on
``duel/python:<version>-bookworm`` instead, made here:

- the local Debian bookworm (``duel/debian:bookworm``, made by ``debootstrap --variant=minbase``
  unless the engine has it: image_build.make_local_base) with the run-time libraries CPython's
  extension modules load and the few packages the official images add (``RUNTIME_PACKAGES``,
  installed with apt-get as the official images do);
- a Python of the base's minor version found on this machine (``$DUEL_PYTHON_3_7``, ``python3.7``
  on PATH or pyenv's build: eras.find_python) copied into ``/usr/local`` as the official images lay
  it out (``/usr/local/bin/python3.7`` and its ``python3``/``python`` links,
  ``/usr/local/lib/python3.7``, ``/usr/local/lib/libpython3.7m.so.1.0``, headers), without the test
  suites, byte code and static library the official images delete, and with the old prefix in its
  scripts and build configuration rewritten to ``/usr/local``; ``ldconfig`` then tells the loader
  about ``/usr/local/lib`` (Debian's ``/etc/ld.so.conf.d/libc.conf`` lists it), and the build
  fails unless that Python imports every module that needs a system library;
- the official images' ``PATH``, ``LANG`` and ``PYTHON_VERSION`` and ``CMD ["python3"]``.

All of it is one ``docker build`` of a Dockerfile written here (``recipe``), in a context that
holds the copied Python.

What differs from the official base: the Debian release (bookworm, not bullseye: a Python built
here links against bookworm's glibc and OpenSSL 3, which bullseye lacks) and the Python build (this
machine's, e.g. pyenv's, not the one the official image compiles in itself; its pip and setuptools
are the ones that Python bundles). The image's own packages are the same: the Dockerfile installs
its lock file into a venv of that Python either way.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from duel.host.stacks import eras, image_build, images

SUITE = "bookworm"
NAME = "duel/python:%s-%s"
BASE_PATTERN = re.compile(r"^python:(\d+\.\d+)(\.\d+)?(-|$)")
# What CPython's extension modules load (ssl/hashlib, sqlite3, ctypes, readline, curses, bz2,
# lzma, zlib, uuid, pyexpat, nis, crypt), in bookworm's names, and what the official images add.
RUNTIME_PACKAGES = ("ca-certificates", "netbase", "tzdata", "libbz2-1.0", "libcrypt1",
                    "libexpat1", "libffi8", "liblzma5", "libncursesw6", "libnsl2", "libreadline8",
                    "libsqlite3-0", "libssl3", "libtinfo6", "libtirpc3", "libuuid1", "zlib1g")
# Modules the base's Python must import once it is in place: each needs a library above.
CHECK_IMPORTS = ("ssl", "hashlib", "sqlite3", "ctypes", "readline", "curses", "bz2", "lzma",
                 "zlib", "uuid", "pyexpat", "decimal", "venv", "ensurepip")
TARGET = "/usr/local"
# What the official images delete after installing Python (and what this machine added to it).
DROPPED_DIRS = {"test", "tests", "idle_test", "__pycache__"}
DROPPED_FILE = re.compile(r"(\.py[co]|^libpython.*\.a)$")
PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
# What of the Python's prefix is copied besides lib/pythonX.Y and its headers.
PROGRAMS = re.compile(r"^(python|pip|pydoc|idle|2to3|easy_install|pyvenv)")
LIBRARIES = re.compile(r"^libpython.*\.so")
PKGCONFIG = re.compile(r"^python")
SYSTEM_PREFIXES = {"", "/usr"}  # a distribution's Python: its prefix holds everything else too


def python_version(base):
    """The X.Y of an official ``python:X.Y[.Z]-...`` base, or None for any other base."""
    match = BASE_PATTERN.match(base)
    return match.group(1) if match else None


def describe(interpreter):
    """{prefix, version, ldversion} of a Python (its own installation prefix, not a venv's)."""
    probe = ("import json, platform, sys, sysconfig; print(json.dumps({'prefix': sys.base_prefix, "
             "'version': platform.python_version(), "
             "'ldversion': sysconfig.get_config_var('LDVERSION')}))")
    answer = subprocess.run([interpreter, "-c", probe], capture_output=True, text=True)
    if answer.returncode != 0:
        raise images.ImageError("cannot ask %s about itself: %s" % (interpreter, answer.stderr))
    return json.loads(answer.stdout)


def base_name(found):
    return NAME % (found["version"], SUITE)


def _ignore(folder, names):
    dropped = [name for name in names if name in DROPPED_DIRS or DROPPED_FILE.search(name)]
    if os.path.basename(folder) == "site-packages":  # .pth hooks are this machine's, not Python's
        dropped += [name for name in names if name.endswith(".pth")]
    return dropped


def _rewrite_prefix(folder, old, new):
    """Replace ``old`` by ``new`` in the text files (scripts, sysconfig data, Makefile, .pc)."""
    old, new = old.encode(), new.encode()
    for top, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as handle:
                content = handle.read()
            if old not in content or content.startswith(b"\x7fELF") or b"\0" in content:
                continue
            with open(path, "wb") as handle:
                handle.write(content.replace(old, new))


def _copy_files(source, target, wanted):
    """Copy the files (and links) of folder ``source`` whose name matches ``wanted``."""
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(source)) if os.path.isdir(source) else []:
        path = os.path.join(source, name)
        if wanted.match(name) and not os.path.isdir(path) and not DROPPED_FILE.search(name):
            shutil.copy2(path, os.path.join(target, name), follow_symlinks=False)


def install_python(found, root):
    """Copy the Python ``found`` (describe()) into ``root``/usr/local, official-image style."""
    source, minor = found["prefix"].rstrip("/"), found["version"].rsplit(".", 1)[0]
    if source in SYSTEM_PREFIXES:
        raise images.ImageError(
            "the stand-in base needs a Python installed in a prefix of its own (e.g. pyenv's "
            "build, or one configured with --prefix); the one found lives in %s, among the "
            "system's files: point $DUEL_PYTHON_%s at another" % (source, minor.replace(".", "_")))
    target = os.path.join(root, TARGET.lstrip("/"))
    for part in (os.path.join("lib", "python" + minor),
                 os.path.join("include", "python" + found["ldversion"])):
        if os.path.isdir(os.path.join(source, part)):
            shutil.copytree(os.path.join(source, part), os.path.join(target, part),
                            symlinks=True, ignore=_ignore, dirs_exist_ok=True)
    _copy_files(os.path.join(source, "bin"), os.path.join(target, "bin"), PROGRAMS)
    _copy_files(os.path.join(source, "lib"), os.path.join(target, "lib"), LIBRARIES)
    _copy_files(os.path.join(source, "lib", "pkgconfig"),
                os.path.join(target, "lib", "pkgconfig"), PKGCONFIG)
    if not os.path.exists(os.path.join(target, "bin", "python3")):
        os.symlink("python" + minor, os.path.join(target, "bin", "python3"))
    if not os.path.lexists(os.path.join(target, "bin", "python")):
        os.symlink("python3", os.path.join(target, "bin", "python"))
    if source != TARGET:
        _rewrite_prefix(target, source, TARGET)


def recipe(found):
    """The Dockerfile of the stand-in: the run-time packages on the local Debian, then Python."""
    return "\n".join([
        "FROM " + image_build.LOCAL_BASE_NAME % SUITE,
        "SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]",
        "ARG DEBIAN_FRONTEND=noninteractive",
        "RUN apt-get update && apt-get install -y --no-install-recommends %s"
        " && apt-get clean && rm -rf /var/lib/apt/lists/*" % " ".join(RUNTIME_PACKAGES),
        "COPY usr/local/ %s/" % TARGET,
        "ENV PATH=%s LANG=C.UTF-8 PYTHON_VERSION=%s" % (PATH, found["version"]),
        # the loader learns where libpython is; the Python proves it has its libraries
        "RUN ldconfig && python3 -c 'import %s'" % ", ".join(CHECK_IMPORTS),
        "CMD [\"python3\"]",
        ""])


def make(version, log=sys.stderr, mirror=None):
    """Build ``duel/python:<X.Y.Z>-bookworm`` from this machine's Python ``version`` (X.Y) unless
    the engine has it (and ``duel/debian:bookworm`` first, unless it has that); returns its name."""
    try:
        found = describe(eras.find_python(version))
    except eras.EraError as error:
        raise images.ImageError("the stand-in for python:%s needs a Python %s here: %s"
                                % (version, version, error))
    name = base_name(found)
    if images.image_id(name) is not None:
        return name
    if images.image_id(image_build.LOCAL_BASE_NAME % SUITE) is None:
        image_build.make_local_base(SUITE, log, mirror)
    log.write("making %s: Debian %s and the Python in %s\n" % (name, SUITE, found["prefix"]))
    with tempfile.TemporaryDirectory(prefix="duel-python-base-") as context:
        install_python(found, context)
        with open(os.path.join(context, "Dockerfile"), "w") as handle:
            handle.write(recipe(found))
        command = ["docker", "build", "--network", "host", "--tag", name,
                   "--label", "duel.python-from=" + found["prefix"], context]
        log.write("$ %s\n" % " ".join(command))
        log.flush()
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise images.ImageError("building the stand-in base %s failed (status %d)"
                                % (name, result.returncode))
    return name
