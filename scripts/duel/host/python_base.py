"""A stand-in for an official ``python:X.Y`` base image, made on this machine without a registry.

The 2019 CPU image starts from ``python:3.7.16-slim-bullseye``. Where no image registry is
reachable, ``scripts/build_image.py hf2019 cpu --local-base`` builds it on
``duel/python:<version>-bookworm`` instead, made here:

- Debian bookworm from Debian's packages (``debootstrap --variant=minbase``, as the local Debian
  base of images.make_local_base), with the run-time libraries CPython's extension modules link
  against and the few packages the official images add (``RUNTIME_PACKAGES``);
- a Python of the base's minor version found on this machine (``$DUEL_PYTHON_3_7``, ``python3.7``
  on PATH or pyenv's build: eras.find_python) copied into ``/usr/local`` as the official images lay
  it out (``/usr/local/bin/python3.7`` and its ``python3``/``python`` links,
  ``/usr/local/lib/python3.7``, ``/usr/local/lib/libpython3.7m.so.1.0``, headers), without the test
  suites, byte code and static library the official images delete, and with the old prefix in its
  scripts and build configuration rewritten to ``/usr/local``; ``ldconfig`` then tells the loader
  about ``/usr/local/lib`` (Debian's ``/etc/ld.so.conf.d/libc.conf`` lists it);
- imported with ``docker import`` with the official images' ``PATH``, ``LANG`` and
  ``PYTHON_VERSION`` and ``CMD ["python3"]``.

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

from duel.host import eras, images

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


def install_python(found, root):
    """Copy the Python ``found`` (describe()) into ``root``/usr/local, official-image style."""
    source, minor = found["prefix"], found["version"].rsplit(".", 1)[0]
    target = os.path.join(root, TARGET.lstrip("/"))
    for part in ("bin", os.path.join("lib", "python" + minor), os.path.join("lib", "pkgconfig"),
                 os.path.join("include", "python" + found["ldversion"])):
        if os.path.isdir(os.path.join(source, part)):
            shutil.copytree(os.path.join(source, part), os.path.join(target, part),
                            symlinks=True, ignore=_ignore, dirs_exist_ok=True)
    lib = os.path.join(source, "lib")
    for name in sorted(os.listdir(lib)):
        if name.startswith("libpython") and ".so" in name:
            shutil.copy2(os.path.join(lib, name), os.path.join(target, "lib", name),
                         follow_symlinks=False)
    if not os.path.exists(os.path.join(target, "bin", "python3")):
        os.symlink("python" + minor, os.path.join(target, "bin", "python3"))
    if not os.path.lexists(os.path.join(target, "bin", "python")):
        os.symlink("python3", os.path.join(target, "bin", "python"))
    _rewrite_prefix(target, source.rstrip("/"), TARGET)


def check_python(root, log):
    """Run ldconfig in ``root`` and import every module that needs a system library there."""
    subprocess.run(["ldconfig", "-r", root], stdout=log, stderr=subprocess.STDOUT, check=True)
    probe = "import %s" % ", ".join(CHECK_IMPORTS)
    answer = subprocess.run(["chroot", root, os.path.join(TARGET, "bin", "python3"), "-c", probe],
                            capture_output=True, text=True, env={"PATH": PATH, "LANG": "C.UTF-8"})
    if answer.returncode != 0:
        raise images.ImageError("the stand-in base's Python does not run: %s"
                                % answer.stderr.strip()[-2000:])


def make(version, log=sys.stderr, mirror=None):
    """Import ``duel/python:<X.Y.Z>-bookworm`` made from this machine's Python ``version`` (X.Y)
    unless the engine has it; returns its name."""
    try:
        found = describe(eras.find_python(version))
    except eras.EraError as error:
        raise images.ImageError("the stand-in for python:%s needs a Python %s here: %s"
                                % (version, version, error))
    name = base_name(found)
    if images.image_id(name) is not None:
        return name
    log.write("making %s: Debian %s and the Python in %s\n" % (name, SUITE, found["prefix"]))

    def prepare(root):
        install_python(found, root)
        check_python(root, log)

    changes = ["ENV PATH=" + PATH, "ENV LANG=C.UTF-8", "ENV PYTHON_VERSION=" + found["version"],
               'CMD ["python3"]']
    return images.make_local_base(SUITE, log, mirror, name=name, include=RUNTIME_PACKAGES,
                                  prepare=prepare, changes=changes)
