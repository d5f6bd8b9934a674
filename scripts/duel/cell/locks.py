"""Lock files and installed sets, read the way every era's Python can (3.6 has no importlib.metadata).

A lock file (envs/*.txt) pins every package of an environment: ``name==version`` lines, each
followed by its ``--hash=sha256:...`` lines. The installed set of an environment is every
distribution its interpreter can import, found as ``*.dist-info`` / ``*.egg-info`` folders on
``sys.path`` (the first of a name wins, as for import), less pip itself (the installer, whose
version is whatever the interpreter bundles) and Duel's own package (the code, not the stack). Both are compared as {canonical name: version}.

Environments are layered: .venv holds envs/current-cpu.txt and the host's tools (envs/host.txt),
and may hold the test tools
(envs/tests.txt) and uv (envs/uv.txt); .venv-slurm sees .venv's packages and adds
envs/slurm.txt. So an environment agrees exactly with its lock when every pin of its own lock is
installed as pinned and every other installed package is a pin of one of its layers' lock files.
"""
import hashlib
import os
import re
import sys


REQUIRES = re.compile(r"^#\s*requires-python:\s*(\d+\.\d+)\s*$", re.MULTILINE)
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;#]+)")
LEFT_OUT = ("pip", "duel")
# The lock files that may be layered on an era's own lock (same folder): see the docstring.
LAYERS = {"current-cpu.txt": ("host.txt", "tests.txt", "slurm.txt", "uv.txt")}


def lock_sha256(path):
    """A lock file's identity: SHA-256 of its pins, hashes and options, without its comments and
    blank lines, so that rewording a header names the same environment, image and stored runs."""
    kept = []
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#"):
                kept.append(line)
    return hashlib.sha256("\n".join(kept).encode("utf-8")).hexdigest()


def canonical(name):
    """A distribution name as PEP 503 compares them: 'Jinja2', 'jinja_2' -> 'jinja2', 'jinja-2'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path):
    """{canonical name: version} of every ``name==version`` line of a lock file."""
    pins = {}
    with open(path) as handle:
        for line in handle:
            match = PIN.match(line)
            if match:
                pins[canonical(match.group(1))] = match.group(2)
    return pins


def read_hashes(path):
    """{canonical name: sorted list of the SHA-256 hashes the lock file allows for its file}."""
    hashes, name = {}, None
    with open(path) as handle:
        for line in handle:
            match = PIN.match(line)
            if match:
                name = canonical(match.group(1))
                hashes[name] = []
            elif not line.startswith(" "):
                name = None
            if name is not None:
                hashes[name] += re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
    return dict((name, sorted(found)) for name, found in hashes.items())


def required_python(path):
    """The ``X.Y`` of a lock file's ``# requires-python: X.Y`` line, or None where it has none
    (the test tools' layered locks)."""
    with open(path) as handle:
        match = REQUIRES.search(handle.read())
    return match.group(1) if match else None


def _metadata(path):
    """(name, version) from a METADATA / PKG-INFO file's headers, or None."""
    name = version = None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                if line.startswith("Name:") and name is None:
                    name = line[5:].strip()
                elif line.startswith("Version:") and version is None:
                    version = line[8:].strip()
    except (IOError, OSError):
        return None
    return (name, version) if name and version else None


def installed(paths=None):
    """{canonical name: version} of every distribution on ``paths`` (default sys.path)."""
    found = {}
    for folder in sys.path if paths is None else paths:
        try:
            entries = sorted(os.listdir(folder or "."))
        except (IOError, OSError):
            continue
        for entry in entries:
            path = os.path.join(folder or ".", entry)
            if entry.endswith(".dist-info"):
                meta = _metadata(os.path.join(path, "METADATA"))
            elif entry.endswith(".egg-info"):
                meta = _metadata(os.path.join(path, "PKG-INFO") if os.path.isdir(path) else path)
            else:
                continue
            if meta and canonical(meta[0]) not in LEFT_OUT:
                found.setdefault(canonical(meta[0]), meta[1])
    return found


def set_text(packages):
    """The normalised text of a set of packages: sorted ``name==version`` lines."""
    return "".join("%s==%s\n" % (name, packages[name]) for name in sorted(packages))


def set_sha256(packages):
    return hashlib.sha256(set_text(packages).encode("utf-8")).hexdigest()


def drift(packages, pins):
    """The pins of a lock that are not installed as pinned: [(name, pinned, installed or None)]."""
    return [(name, pins[name], packages.get(name)) for name in sorted(pins)
            if packages.get(name) != pins[name]]


def layer_pins(lock):
    """{lock file: its pins} of the lock files that may be layered on ``lock``."""
    folder = os.path.dirname(lock)
    layers = {}
    for name in LAYERS.get(os.path.basename(lock), ()):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            layers[path] = read_pins(path)
    return layers


def extras(packages, pins, layers):
    """Installed packages not in ``pins``: ([(name, version, layer lock file)], [unknown
    ``name==version``]): those at a version a layer pins, and the rest."""
    layered, unknown = [], []
    for name in sorted(set(packages) - set(pins)):
        layer = next((path for path, layer in sorted(layers.items())
                      if layer.get(name) == packages[name]), None)
        if layer:
            layered.append((name, packages[name], layer))
        else:
            unknown.append("%s==%s" % (name, packages[name]))
    return layered, unknown


def describe_drift(changed, unknown):
    """One line: 'numpy 2.4.6 -> 2.4.7; six 1.17.0 -> missing; not in any lock: foo==1.0'."""
    parts = ["%s %s -> %s" % (name, pinned, found or "missing") for name, pinned, found in changed]
    if unknown:
        parts.append("not in any lock: " + " ".join(unknown))
    return "; ".join(parts)


def lock_columns(lock, checkout=None, paths=None):
    """The shard's columns about the environment's lock file and installed set.

    ``lock_match``: the installed set is exactly the lock's pins plus, at their pinned versions,
    packages of the lock files layered on it; ``lock_drift`` says what differs otherwise.
    """
    packages = installed(paths)
    columns = {"lock_file": None, "lock_sha256": None, "installed_sha256": set_sha256(packages),
               "lock_match": None, "lock_drift": None}
    if lock is None or not os.path.isfile(lock):
        return columns
    pins = read_pins(lock)
    changed = drift(packages, pins)
    _, unknown = extras(packages, pins, layer_pins(lock))
    columns.update({
        "lock_file": os.path.relpath(lock, checkout) if checkout else lock,
        "lock_sha256": lock_sha256(lock),
        "lock_match": not changed and not unknown,
        "lock_drift": describe_drift(changed, unknown),
    })
    return columns
