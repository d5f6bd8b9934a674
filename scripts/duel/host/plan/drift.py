"""Whether the workflow's own environment (.venv) is still what its lock file pins.

Drift means a pin of envs/current-cpu.txt that is not installed as pinned: missing, or at another
version (a package upgraded by hand). Planning stops on it, listing each difference, unless config
key accept_drift says to run anyway (every shard then records it). Packages of the lock files
layered on it (the test tools, uv, the SLURM plugin) are expected and listed; packages in no lock
file are listed too (the shards' lock_match says the set is not exact) but stop nothing.
"""
import json
import os
import sys

import duel
from duel.cell import locks

from duel.host.plan.config_keys import PlanError
from duel.host.stacks.eras import MARKER

LOCK = os.path.join("envs", "current-cpu.txt")


def check_package(checkout):
    """The package imported is the workflow's own: a Snakefile of another checkout (a rebuild's
    code, a second clone) run by this .venv would otherwise run this checkout's code."""
    imported = os.path.realpath(os.path.dirname(os.path.dirname(duel.__file__)))
    wanted = os.path.realpath(os.path.join(checkout, "scripts"))
    if imported != wanted:
        raise PlanError("the workflow in %s imports the duel package from %s: run it with "
                        "PYTHONPATH=%s, or with that checkout's own .venv"
                        % (checkout, imported, wanted))


def _setup_note(checkout, lock):
    """What scripts/setup.sh's marker says about the lock this environment was set up from."""
    try:
        with open(os.path.join(sys.prefix, MARKER)) as handle:
            marker = json.load(handle)
    except (OSError, ValueError):
        return "%s has no %s: not set up by scripts/setup.sh" % (sys.prefix, MARKER)
    if marker.get("lock_sha256") != locks.lock_sha256(lock):
        return "it was set up (%s) from another version of %s" % (
            marker.get("built_at", "?"), LOCK)
    return "it was set up (%s) from this %s" % (marker.get("built_at", "?"), LOCK)


def summary_line(checkout, packages=None):
    """(differences, one line for the log) of the running interpreter's environment."""
    lock = os.path.join(checkout, LOCK)
    packages = locks.installed() if packages is None else packages
    pins = locks.read_pins(lock)
    changed = locks.drift(packages, pins)
    layered, unknown = locks.extras(packages, pins, locks.layer_pins(lock))
    counts = {}
    for _, _, layer in layered:
        counts[os.path.relpath(layer, checkout)] = counts.get(os.path.relpath(layer, checkout), 0) + 1
    line = "workflow environment %s: %d of %d pins of %s as pinned" % (
        sys.prefix, len(pins) - len(changed), len(pins), LOCK)
    if counts:
        line += "; also %s" % ", ".join("%s (%d)" % item for item in sorted(counts.items()))
    if unknown:
        line += "; in no lock file: %s" % " ".join(unknown)
    return changed, line


def check_workflow_env(checkout, accept_drift, log=sys.stderr, packages=None):
    """Stop planning (PlanError) when the running environment drifted from its lock file."""
    changed, line = summary_line(checkout, packages)
    log.write(line + "\n")
    if not changed:
        return []
    listed = "\n".join("  %s: lock %s, installed %s" % (name, pinned, found or "nothing")
                       for name, pinned, found in changed)
    if accept_drift:
        log.write("config key accept_drift: running with a drifted environment "
                  "(every shard records it):\n%s\n" % listed)
        return changed
    raise PlanError(
        "the workflow's environment %s differs from its lock file %s (%s):\n%s\n"
        "Install the lock's versions again (`bash scripts/setup.sh`, with --tests if you use the "
        "test tools), or set config key accept_drift: true to run anyway (every shard then "
        "records the difference)." % (sys.prefix, LOCK, _setup_note(checkout, os.path.join(
            checkout, LOCK)), listed))
