"""An era from a date: torch, TensorFlow and transformers, and everything under them, as they
stood on that day, resolved into a hashed lock and entered in envs/eras.yaml.

uv resolves against the package index as of a date (``--exclude-newer``); the Python is the
newest of those at hand (PYTHONS) for which every package had wheels then, since no other Python
can be installed here. What a framework cannot run in such an era (``torch.compile`` before
torch 2.0, say) is left to the adapters' own checks: those points become ``skipped`` rows.
"""
import datetime
import os
import re
import subprocess
import tempfile

from duel.cell import frameworks, locks
from duel.host.stacks import eras

# What a cell imports, beside the standard library: the frameworks, transformers, and the shard
# writer's numpy and pyarrow.
FRAMEWORK_PACKAGES = tuple(frameworks.package(name) for name in frameworks.NAMES)
REQUIREMENTS = FRAMEWORK_PACKAGES + ("transformers", "numpy", "pyarrow")
PYTHONS = ("3.11", "3.7", "3.6")  # at hand here, newest first
PLATFORM = "x86_64-manylinux_2_28"  # accepts every older manylinux wheel too
LABELLED = (("torch", "torch"), ("tensorflow", "TensorFlow"), ("transformers", "transformers"))
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+_-]*$")


class AsOfError(RuntimeError):
    """The date, a pin or the resolution cannot make an era; the message says why."""


def check_date(text):
    """'2021-06-01' as given, or AsOfError: a real past day."""
    try:
        day = datetime.datetime.strptime(text, "%Y-%m-%d").date() if DATE.match(text) else None
    except ValueError:
        day = None
    if day is None or day > datetime.date.today():
        raise AsOfError("--as-of %r is not a past date as YYYY-MM-DD" % text)
    return text


def requirements(pins=(), packages=REQUIREMENTS):
    """The requirement lines: each package, or its pin (``name==version``) where one is given."""
    pinned = {}
    for pin in pins:
        if not PIN.match(pin):
            raise AsOfError("--pin %r is not NAME==VERSION" % pin)
        pinned[locks.canonical(pin.partition("==")[0])] = pin
    return [pinned.pop(locks.canonical(name), name) for name in packages] + sorted(pinned.values())


def resolve(uv, uv_env, options, date, lines, pythons=PYTHONS, prefer=""):
    """(Python, uv's hashed lock text) for ``lines`` as of ``date``: the first of ``pythons``
    that resolves; AsOfError with uv's reason for each where none does. ``prefer``: pins (a
    lock's text) uv keeps wherever they fit, as it keeps those of an existing output file."""
    reasons = []
    with tempfile.TemporaryDirectory() as folder:
        source, output = os.path.join(folder, "as-of.in"), os.path.join(folder, "as-of.txt")
        with open(source, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        for python in pythons:
            with open(output, "w") as handle:
                handle.write(prefer)
            answer = subprocess.run(
                [uv, "pip", "compile", source, "--exclude-newer", date, "--generate-hashes",
                 "--python-platform", PLATFORM, "--no-header", "--quiet", "--output-file",
                 output] + interpreter(python) + list(options), env=uv_env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            if answer.returncode == 0:
                with open(output) as handle:
                    return python, handle.read()
            reasons.append("Python %s: %s" % (python, _last_words(answer.stderr)))
    raise AsOfError("no Python at hand resolves %s as of %s (%s)"
                    % (", ".join(lines), date, "; ".join(reasons)))


def interpreter(python):
    """uv's option naming the Python: its interpreter where one is at hand, so that a package
    of that day published only as source is built by the Python it is for; else the version."""
    try:
        return ["--python", eras.find_python(python)]
    except eras.EraError:
        return ["--python-version", python]


def _last_words(text):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-3:])[:400] if lines else "no message"


def versions(lock_text):
    """{canonical name: version} of a lock's pins (as locks.read_pins reads a file)."""
    return dict((locks.canonical(match.group(1)), match.group(2))
                for match in map(locks.PIN.match, lock_text.splitlines()) if match)


def lock_text(era, date, python, lines, resolved, made_by=None, notes=()):
    """The lock file: a header saying what made it (the date and the resolver's settings, the
    Python as ``requires-python``, ``notes``), then uv's pins with their hashes."""
    header = [
        "# Era \"%s\": torch, TensorFlow and transformers as they stood on %s," % (era, date),
        "# every package pinned with its hashes.",
        "# requires-python: %s" % python,
        "# Made by `%s` from: %s." % (made_by or "duel lock --as-of %s" % date, ", ".join(lines)),
        "# Resolver: uv pip compile --exclude-newer %s --python %s" % (date, python),
        "# --python-platform %s, over pip's sources; Python %s is the newest at hand" % (
            PLATFORM, python),
        "# (%s) with wheels of all of them then." % ", ".join(PYTHONS),
    ] + ["# " + note for note in notes]
    return "\n".join(header) + "\n" + resolved.rstrip("\n") + "\n"


def label(resolved, date):
    found = versions(resolved)
    return "%s (as of %s)" % (", ".join("%s %s" % (shown, found[name]) for name, shown in LABELLED
                                        if name in found), date)


ENTRY = """  {era}:
    date: {date}
    label: {label}
    python: "{python}"
    locks: {{cpu: {lock}}}
"""


def write_era(checkout, era, date, python, text, registry=eras.REGISTRY, locks_dir="envs"):
    """``<locks_dir>/<era>.txt`` and its entry in ``registry`` (both under ``checkout``; the
    registry sorts eras by date); an era of that name already known is refused."""
    if era in eras.registry(checkout):
        raise AsOfError("era %r is in %s already: choose another name, or remove it first"
                        % (era, registry))
    lock = os.path.join(checkout, locks_dir, era + ".txt")
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    with open(lock, "w") as handle:
        handle.write(text)
    path = os.path.join(checkout, registry)
    with open(path, "a") as handle:
        if handle.tell() == 0:
            handle.write("eras:\n")
        handle.write(ENTRY.format(era=era, date=date, label=label(text, date), python=python,
                                  lock=os.path.join(locks_dir, era + ".txt")))
    return lock


def make_era(checkout, era, day, pins, uv, uv_env, options):
    """The era ``era`` of the day ``day`` (YYYY-MM-DD): its lock resolved as the index stood
    then (``pins``: packages held at a release), written with its registry entry and conda
    twin; (its lock's path, its text, the date, its Python)."""
    date = check_date(day)
    lines = requirements(pins)
    python, resolved = resolve(uv, uv_env, options, date, lines)
    text = lock_text(era, date, python, lines, resolved)
    lock = write_era(checkout, era, date, python, text)
    eras.write_conda_twin(checkout, os.path.relpath(lock, checkout))
    return lock, text, date, python
