"""Eras: pinned software stacks, and the virtual environments the workflow builds for them.

An era is named by its lock file in envs/: ``envs/<era>-<device>.txt`` or ``envs/<era>.txt``,
every package pinned, and a ``# requires-python: X.Y`` line. Era ``current`` is the workflow's own
environment (installed by scripts/setup.sh from envs/current-cpu.txt); every other era gets a
virtual environment built from its lock file, once, and reused:

1. find the interpreter (``DUEL_PYTHON_X_Y``, ``pythonX.Y`` on PATH, then pyenv's versions);
2. remove whatever is at the prefix (a partial build from an interrupted run included);
3. create the venv and ``pip install --no-deps -r <lock>`` (exactly the pinned packages), then
   ``pip check``;
4. write ``duel-env.json`` last (lock file hash, interpreter, ``pip freeze``), atomically.

The marker file is the proof of a finished build: an environment without it, or whose marker
names another lock file hash or an interpreter that is gone, is stale and is rebuilt, never reused.
"""
import datetime
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

NATIVE_ERA = "current"
NATIVE_DEVICE = "cpu"


def is_native(era, device):
    """Whether cells of ``era`` on ``device`` run in the workflow's own environment (today's CPU
    stack, envs/current-cpu.txt); every other era and device gets a built environment."""
    return era == NATIVE_ERA and device == NATIVE_DEVICE
MARKER = "duel-env.json"
REQUIRES = re.compile(r"^#\s*requires-python:\s*(\d+\.\d+)\s*$", re.MULTILINE)


class EraError(ValueError):
    """An era that cannot be planned or built here; the message says what to do."""


def lock_file(checkout, era, device):
    """The era's lock file: envs/<era>-<device>.txt, else envs/<era>.txt."""
    candidates = [os.path.join(checkout, "envs", "%s-%s.txt" % (era, device)),
                  os.path.join(checkout, "envs", "%s.txt" % era)]
    for path in candidates:
        if os.path.isfile(path):
            return path
    known = sorted({re.sub(r"-(cpu|cuda)$", "", os.path.basename(path)[:-4])
                    for path in glob.glob(os.path.join(checkout, "envs", "*.txt"))
                    if not path.endswith("tests.txt")})
    raise EraError("config key 'eras': era %r has no lock file (%s); eras with one: %s"
                   % (era, " or ".join(candidates), ", ".join(known)))


def required_python(lock):
    """The X.Y interpreter version a lock file asks for."""
    with open(lock) as handle:
        match = REQUIRES.search(handle.read())
    if not match:
        raise EraError("%s has no '# requires-python: X.Y' line" % lock)
    return match.group(1)


def file_sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _pyenv_candidates(version):
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        root = os.path.expanduser("~/.pyenv")
    pattern = os.path.join(root, "versions", version + ".*", "bin", "python" + version)
    return sorted(glob.glob(pattern), reverse=True)


def find_python(version):
    """An interpreter of ``version`` (X.Y), or an EraError saying how to get one."""
    variable = "DUEL_PYTHON_" + version.replace(".", "_")
    candidates = [os.environ.get(variable), shutil.which("python" + version)]
    candidates += _pyenv_candidates(version)
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            found = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True)
            if found.returncode == 0 and found.stdout.strip() == version:
                return candidate
    raise EraError(
        "this era needs Python %s and none was found (looked at $%s, python%s on PATH and "
        "pyenv's versions). Install it (e.g. `pyenv install %s`), or point %s at one, or run "
        "the era in its container image (containers/README.md)."
        % (version, variable, version, version, variable))


def env_prefix(envs_dir, era, device):
    return os.path.join(envs_dir, era, device)


def env_python(prefix):
    return os.path.join(prefix, "bin", "python")


def read_marker(prefix):
    try:
        with open(os.path.join(prefix, MARKER)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def stale_reason(prefix, lock):
    """Why the environment at ``prefix`` cannot be reused for ``lock``, or None if it can."""
    marker = read_marker(prefix)
    if marker is None:
        if os.path.exists(prefix):
            return "a partial build (no %s): an interrupted install" % MARKER
        return "not built yet"
    if marker.get("lock_sha256") != file_sha256(lock):
        return "built from another version of %s" % os.path.basename(lock)
    if not os.access(env_python(prefix), os.X_OK):
        return "its interpreter %s is gone" % env_python(prefix)
    return None


def discard_if_stale(prefix, lock):
    """Remove the marker of an environment that must not be reused, so the rule rebuilds it."""
    reason = stale_reason(prefix, lock)
    if reason and os.path.exists(os.path.join(prefix, MARKER)):
        os.remove(os.path.join(prefix, MARKER))
    return reason


def settle(prefix, lock, discard, log=sys.stderr):
    """Why the environment at ``prefix`` must be built, or None; said on ``log``.

    With ``discard`` (only the main invocation of a real run) a stale environment loses its
    marker, so that its build rule runs again; without it (a dry run, any other invocation that
    only plans) nothing on disk changes and the message says what a real run would rebuild.
    """
    reason = discard_if_stale(prefix, lock) if discard else stale_reason(prefix, lock)
    if reason:
        log.write("environment %s %s: %s\n" % (
            prefix, "will be built" if discard else "would be built by a real run (nothing "
            "deleted now)", reason))
    return reason


def _run(command, log):
    log.write("$ %s\n" % " ".join(command))
    log.flush()
    subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)


def build_env(era, lock, prefix, log=sys.stderr):
    """Build the era's venv from its lock file (see the module docstring); returns the marker."""
    python = find_python(required_python(lock))
    if os.path.exists(prefix):
        log.write("removing %s (%s)\n" % (prefix, stale_reason(prefix, lock) or "rebuild"))
        shutil.rmtree(prefix)
    _run([python, "-m", "venv", prefix], log)
    pip = [env_python(prefix), "-m", "pip", "--disable-pip-version-check"]
    _run(pip + ["install", "--no-deps", "-r", lock], log)
    _run(pip + ["check"], log)
    freeze = subprocess.run(pip + ["freeze"], capture_output=True, text=True, check=True)
    version = subprocess.run([env_python(prefix), "--version"], capture_output=True, text=True,
                             check=True)
    marker = {
        "era": era,
        "lock_file": os.path.abspath(lock),
        "lock_sha256": file_sha256(lock),
        "interpreter": python,
        "python": (version.stdout or version.stderr).split()[-1],
        "packages": freeze.stdout.split(),
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    partial = os.path.join(prefix, MARKER + ".partial")
    with open(partial, "w") as handle:
        json.dump(marker, handle, indent=2)
    os.replace(partial, os.path.join(prefix, MARKER))
    return marker
