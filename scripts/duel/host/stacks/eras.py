"""Eras: pinned software stacks, and the virtual environments the workflow builds for them.

Every era is one entry of envs/eras.yaml (REGISTRY): its date, Python, lock file per device,
image per device and the modes it lacks; ``registry`` reads it, and everything that names an era
asks it. A lock file pins every package and has a ``# requires-python: X.Y`` line. Era ``current`` is the workflow's own
environment (installed by scripts/setup.sh from envs/current-cpu.txt); every other era gets a
virtual environment built from its lock file, once, and reused:

1. find the interpreter (``DUEL_PYTHON_X_Y``, ``pythonX.Y`` on PATH, then pyenv's versions);
2. remove whatever is at the prefix (a partial build from an interrupted run included);
3. create the venv and ``pip install --require-hashes --no-deps -r <lock>`` (exactly the pinned
   packages, each file checked against the lock's hashes), then ``pip check``;
4. write ``duel-env.json`` last (lock file hash, interpreter, ``pip freeze``), atomically.

Each environment lives at ``<era_envs_dir>/<era>/<device>/<first 12 hex digits of its lock file's
SHA-256>`` (``keyed_prefix``), so environments of different versions of a lock file (today's, and
an old run's being rebuilt by ``duel rebuild``) coexist. Era ``current`` runs in ``.venv``
only while ``.venv`` holds its lock's pins; otherwise it is built like any other era.

The marker file is the proof of a finished build: an environment without it, or whose marker
names another lock file hash or an interpreter that is gone, is stale and is rebuilt, never reused.
Builds go through ``ensure_env``: one builder per environment at a time (a lock file beside it),
so two runs that share ``era_envs_dir`` wait for each other instead of removing each other's
half-built environment, and the second reuses what the first built.
"""
import collections
import datetime
import fcntl
import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

from duel.cell import files, locks
from duel.cell.locks import lock_sha256
from duel.host.stacks import pip_sources

WORKFLOW_ENV_ERA = "current"
WORKFLOW_ENV_DEVICE = "cpu"


def in_workflow_env(era, device, lock=None):
    """Whether cells of ``era`` on ``device`` run in the workflow's own environment (today's CPU
    stack, envs/current-cpu.txt); every other era and device gets a built environment. Given the
    era's ``lock``, era ``current`` runs there only while this environment holds the lock's pins
    (a rebuild of an old run whose lock differs builds an environment of its own)."""
    if era != WORKFLOW_ENV_ERA or device != WORKFLOW_ENV_DEVICE:
        return False
    return lock is None or not workflow_env_mismatches(lock)


@functools.lru_cache(maxsize=None)
def _mismatches(lock, digest):
    return tuple("%s==%s (here: %s)" % (name, pinned, found or "not installed")
                 for name, pinned, found in locks.drift(locks.installed(), locks.read_pins(lock)))


def workflow_env_mismatches(lock):
    """The pins of ``lock`` this interpreter's environment does not hold, by the one drift rule
    (locks.drift: a local label such as +cpu counts); empty when the environment is that lock's."""
    return list(_mismatches(lock, lock_sha256(lock)))
MARKER = "duel-env.json"
REGISTRY = os.path.join("envs", "eras.yaml")
# A registry of more eras, beside the checkout's (a bisection's releases, duel/host/bisect/):
# its entries join envs/eras.yaml's wherever eras are read, the workflow's jobs included.
MORE_ERAS_ENV = "DUEL_MORE_ERAS"
# The checkout this code is part of: whose registry the tables and charts read.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
Era = collections.namedtuple("Era", "name date label python locks images lacks")


class EraError(ValueError):
    """An era that cannot be planned or built here; the message says what to do."""


def registry(checkout=CHECKOUT):
    """{name: Era} of envs/eras.yaml and of the file $DUEL_MORE_ERAS names, oldest first; {}
    for a checkout from before the registry (its eras are then found by their lock files' names
    alone). A lock path is relative to the checkout, or absolute."""
    path = os.path.join(checkout, REGISTRY)
    if not os.path.isfile(path):
        return collections.OrderedDict()
    paths = [path] + [more for more in [os.environ.get(MORE_ERAS_ENV)] if more]
    return _registry(tuple((one, os.path.getmtime(one) if os.path.exists(one) else None)
                           for one in paths))


@functools.lru_cache(maxsize=None)
def _registry(paths):
    eras = []
    for path, mtime in paths:
        if mtime is None:
            raise EraError("$%s names %s, which does not exist" % (MORE_ERAS_ENV, path))
        with open(path) as handle:
            entries = (yaml.safe_load(handle) or {}).get("eras") or {}
        eras += [Era(name, str(entry["date"]), entry.get("label") or name, str(entry["python"]),
                     dict(entry.get("locks") or {}), dict(entry.get("images") or {}),
                     tuple(entry.get("lacks") or ())) for name, entry in entries.items()]
    return collections.OrderedDict((era.name, era) for era in sorted(eras, key=lambda e: e.date))


def in_time_order(names, checkout=CHECKOUT):
    """``names`` of eras oldest first (by their registry dates; unknown ones last, by name)."""
    order = list(registry(checkout))
    return sorted(set(names), key=lambda name: (order.index(name) if name in order
                                                else len(order), name))


def lacks(checkout, era, framework, mode, device, task="inference"):
    """Why ``era`` cannot run ``framework``'s ``mode`` on ``device`` for ``task`` at all, or
    None. An entry names a mode (of its framework), a task, or both, and may name a device; a
    key it leaves out holds for every value."""
    entry = registry(checkout).get(era)
    asked = {"framework": framework, "mode": mode, "device": device, "task": task}
    for lack in (entry.lacks if entry else ()):
        if all(lack[key] == asked[key] for key in asked if key in lack):
            what = " ".join(lack[key] for key in ("framework", "mode") if key in lack)
            if "task" in lack:
                what += (" for " if what else "") + lack["task"]
            return "era %s lacks %s%s: %s (%s)" % (
                era, what, " on %s" % device if "device" in lack else "",
                lack.get("reason", "declared"), REGISTRY)
    return None


def lock_file(checkout, era, device):
    """The era's lock file on ``device`` (envs/eras.yaml; in a checkout from before it,
    envs/<era>-<device>.txt, else envs/<era>.txt)."""
    known = registry(checkout)
    if known:
        entry = known.get(era)
        if entry is None:
            raise EraError("config key 'eras': era %r is not in %s; its eras: %s"
                           % (era, REGISTRY, ", ".join(known)))
        if device not in entry.locks:
            raise EraError("era %s has no lock file for device %s in %s (it has: %s)"
                           % (era, device, REGISTRY, ", ".join(entry.locks) or "none"))
        path = os.path.join(checkout, entry.locks[device])
        if not os.path.isfile(path):
            raise EraError("era %s: its lock file %s (%s) is missing" % (era, path, REGISTRY))
        return path
    candidates = [os.path.join(checkout, "envs", "%s-%s.txt" % (era, device)),
                  os.path.join(checkout, "envs", "%s.txt" % era)]
    for path in candidates:
        if os.path.isfile(path):
            return path
    found = sorted({re.sub(r"-(cpu|cuda)$", "", os.path.basename(path)[:-4])
                    for path in glob.glob(os.path.join(checkout, "envs", "*.txt"))
                    if locks.required_python(path)})  # not the tools' layered locks
    raise EraError("config key 'eras': era %r has no lock file (%s); eras with one: %s"
                   % (era, " or ".join(candidates), ", ".join(found)))


def required_python(lock):
    """The X.Y interpreter version a lock file asks for."""
    version = locks.required_python(lock)
    if not version:
        raise EraError("%s has no '# requires-python: X.Y' line" % lock)
    return version


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


# What names a build made from a lock file (an era environment, a C/C++ runner): the first 12
# hex digits of the lock's hash; LOCK_KEY_PATTERN is the rules' wildcard constraint for it.
LOCK_KEY_PATTERN = "[0-9a-f]{12}"
# An era environment under the environments folder, as the rules spell it with wildcards.
ENV_PATTERN = os.path.join("{era}", "{device}", "{lock_key}")


def lock_key(lock):
    """The short hash that names an environment built from ``lock`` (first 12 hex digits)."""
    return lock_sha256(lock)[:12]


def keyed_prefix(envs_dir, era, device, lock):
    """Where the environment of ``era`` on ``device`` built from ``lock`` lives:
    ``<envs_dir>/<era>/<device>/<lock hash>``, so environments of different lock files (today's
    and an old run's being rebuilt) sit side by side and neither replaces the other."""
    return os.path.join(envs_dir, ENV_PATTERN.format(era=era, device=device,
                                                     lock_key=lock_key(lock)))


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
    if marker.get("lock_sha256") != lock_sha256(lock):
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


UNINSTALLABLE = re.compile(r"(?:No matching distribution found for|Could not find a version "
                           r"that satisfies the requirement)\s+(\S+)")


def install(pip, lock, log):
    """``pip install --no-deps [--require-hashes] -r lock``; when pins cannot be installed (an old lock whose
    packages are gone from the index, or have no build for this interpreter), an EraError
    naming them."""
    with open(lock) as handle:  # hashed (every lock of this checkout): each file checked
        hashed = "--hash=sha256:" in handle.read()
    command = pip + ["install", "--no-deps"] + (["--require-hashes"] if hashed else []) + [
        "-r", lock]
    log.write("$ %s\n" % " ".join(command))
    answer = subprocess.run(command, capture_output=True, text=True)
    log.write(answer.stdout + answer.stderr)
    log.flush()
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    if answer.returncode != 0 and os.path.exists(uv) and any(
            version.endswith("+cpu") for version in locks.read_pins(lock).values()):
        # A CPU build of torch is on PyTorch's own index (pip_sources.torch_cpu_options).
        options, environment = pip_sources.uv_options(pip_sources.pip_settings(pip[0]))
        command = [uv, "pip", "install", "--python", pip[0], "--no-deps", "--require-hashes"
                   ] + pip_sources.torch_cpu_options() + options + ["-r", lock]
        log.write("$ %s\n" % " ".join(command))
        answer = subprocess.run(command, capture_output=True, text=True,
                                env=dict(os.environ, **environment))
        log.write(answer.stdout + answer.stderr)
        log.flush()
    if answer.returncode != 0:
        missing = sorted(set(UNINSTALLABLE.findall(answer.stdout + answer.stderr)))
        if missing:
            raise EraError("%s cannot be installed here: %s (pip finds no such release for "
                           "this interpreter and platform)" % (lock, ", ".join(missing)))
        raise subprocess.CalledProcessError(answer.returncode, command)


def build_env(era, lock, prefix, log=sys.stderr):
    """Build the era's venv from its lock file (see the module docstring); returns the marker."""
    python = find_python(required_python(lock))
    if os.path.exists(prefix):
        log.write("removing %s (%s)\n" % (prefix, stale_reason(prefix, lock) or "rebuild"))
        shutil.rmtree(prefix)
    _run([python, "-m", "venv", prefix], log)
    pip = [env_python(prefix), "-m", "pip", "--disable-pip-version-check"]
    install(pip, lock, log)
    _run(pip + ["check"], log)
    freeze = subprocess.run(pip + ["freeze"], capture_output=True, text=True, check=True)
    version = subprocess.run([env_python(prefix), "--version"], capture_output=True, text=True,
                             check=True)
    marker = {
        "era": era,
        "lock_file": os.path.abspath(lock),
        "lock_sha256": lock_sha256(lock),
        "interpreter": python,
        "python": (version.stdout or version.stderr).split()[-1],
        "packages": freeze.stdout.split(),
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    files.write_json(os.path.join(prefix, MARKER), marker)
    return marker


def ensure_env(era, lock, prefix, log=sys.stderr):
    """The environment at ``prefix`` for ``lock``, built unless a finished build is there; returns
    its marker. Holds an exclusive lock (``<prefix>.lock``) while it checks and builds, so a run
    that finds another one building waits and then reuses that build."""
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    with open(os.path.abspath(prefix) + ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if stale_reason(prefix, lock) is None:
            log.write("environment %s: already built from this lock, reused\n" % prefix)
            return read_marker(prefix)
        return build_env(era, lock, prefix, log)


CONDA_ENV = """# Era "{era}" as a conda environment, for `snakemake --sdm conda`.
# The same pins as {lock} (duel lock writes them; tests/test_code_rules.py keeps them equal).
channels:
  - conda-forge
  - nodefaults
dependencies:
  - python={python}
  - pip
  - pip:
"""


def write_conda_twin(checkout, lock):
    """<name>.yaml beside the lock <name>.txt (for ``snakemake --sdm conda``) lists its pins; an
    era's (a lock of the registry) is made where it is missing."""
    path = os.path.join(checkout, os.path.splitext(lock)[0] + ".yaml")
    era = [entry for entry in registry(checkout).values()
           if lock in entry.locks.values()]
    if not os.path.isfile(path):
        if not era:
            return
        with open(path, "w") as handle:
            handle.write(CONDA_ENV.format(era=era[0].name, lock=lock, python=era[0].python))
    with open(os.path.join(checkout, lock)) as handle:
        pins = [match.group(0) for match in map(locks.PIN.match, handle) if match]
    with open(path) as handle:
        lines = handle.read().splitlines()
    lines = lines[:lines.index("  - pip:") + 1] + ["      - " + pin for pin in pins]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
