"""A bisection's answer: its JSON record, table and chart in its folder and in the store.

What else changed with a step is read from the two releases' rows and locks: the framework's
build (``framework_build``: oneDNN, CPU capability, compiler) and the stack (the Python,
transformers, the other framework, numpy). Where the Python or transformers moved with the
release, the data cannot tell the release from them, and the answer says so.
"""
import math
import os
import re

from duel.cell import files
from duel.host.render import bisection
from duel.host.store import archive

PATHS = re.compile(r"-I\S+")
STACK = ("python", "transformers", "numpy")  # beside the other framework
CONFOUNDING = ("python", "transformers")  # a step that moves these is not the release's alone


def facts(build):
    """A build's facts, nested ones flattened to ``outer.inner``, without the paths in them (an
    include folder names its environment)."""
    flat = {}
    for name, value in (build or {}).items():
        if isinstance(value, dict):
            flat.update(("%s.%s" % (name, inner), one) for inner, one in facts(value).items())
        else:
            flat[name] = PATHS.sub("", value).strip() if isinstance(value, str) else value
    return flat


def coincides(before, after):
    """What changed beside the framework between two measured releases (their records): build
    facts and stack versions, as 'name: old -> new' lines."""
    moved = []
    old, new = facts(before.get("build")), facts(after.get("build"))
    for name in sorted(set(old) | set(new)):
        if name != "version" and old.get(name) != new.get(name):
            moved.append("build %s: %s -> %s" % (name, old.get(name, "unsaid"),
                                                 new.get(name, "unsaid")))
    for name in STACK + ("other",):
        if before.get(name) != after.get(name):
            moved.append("%s: %s -> %s" % (name, before.get(name), after.get(name)))
    return moved


def confounded(before, after):
    """The stack parts that moved with the release (so the data cannot tell them apart)."""
    return [name for name in CONFOUNDING if before.get(name) != after.get(name)]


def write(record, folder, store=None):
    """The answer into ``folder`` (JSON, CSV, PNG), and into the store beside its runs."""
    files.write_json(os.path.join(folder, bisection.FILE), record)
    bisection.table(record).to_csv(os.path.join(folder, bisection.TABLE), index=False)
    if any(one["status"] == "measured" for one in record["releases"]):
        bisection.chart(record, os.path.join(folder, bisection.CHART))
    if store:
        archive.add_bisection(store, record)


def finite(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
