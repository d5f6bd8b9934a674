"""Pairs of points that differ in one key, and the ratio of their reported times.

Every comparison in the reports is one of these: PyTorch vs TensorFlow (same era, device,
precision, task, method, model and input), each mode vs eager (same framework and everything
else), each later era vs the oldest (same cell and input). A pair where either point is not ok has no
ratio (N/A), never a dropped row.

The frameworks are paired from the names a run has: every two of them, in the registry's order
(frameworks.FRAMEWORKS), the earlier on top. A framework pair names each side's columns by its
framework's short name (``mode_pt``, ``status_tf``: the names ratios.csv and pairs.csv show),
so a table of several pairs leaves empty the columns of the frameworks a row does not pair;
other pairs name them by the key's values.
"""
import itertools
from collections import namedtuple

import pandas as pd

from duel.cell import frameworks, modes
from duel.host.stacks import eras
from duel.host.tables import scopes, summary

SIDE = ["reported_ms", "status", "framework_version", "mode"]  # each side's columns
JUDGED = ["n_samples", "replicate_samples"]  # to carry where the sides are judged (side)
# One side of a pair as the judge (statistics.judge) reads it.
Side = namedtuple("Side", "status reported_ms n_samples replicate_samples")


class FrameworkPair(namedtuple("FrameworkPair", "frameworks suffixes labels")):
    """Two frameworks compared, top / bottom (> 1: the top one slower): their names, each
    side's column suffix (``_pt``) and label; ``modes``, the columns of one pair of modes, and
    ``keys``, a pair of modes in a scope."""

    @property
    def modes(self):
        return ["mode" + suffix for suffix in self.suffixes]

    @property
    def keys(self):
        return scopes.SCOPE + self.modes

    def faster(self):
        """The verdict's words for each side clearly faster ('PyTorch faster')."""
        return tuple(label + " faster" for label in self.labels)


def framework_pairs(names):
    """Every two of the frameworks ``names`` (FrameworkPair), in the registry's order; a name
    the registry does not know is refused."""
    registry = frameworks.FRAMEWORKS
    unknown = sorted(set(names) - set(registry))
    if unknown:
        raise ValueError("no framework of that name: %s" % ", ".join(unknown))
    ordered = [name for name in registry if name in set(names)]
    return [FrameworkPair(two, tuple("_" + registry[name].short for name in two),
                          tuple(registry[name].label for name in two))
            for two in itertools.combinations(ordered, 2)]


# The pair the run's two-sided views show (the heat maps, the sheets' side-by-side tables, the
# site and generation's verdict): the registry's first two. The ratio tables, the statistics
# sheet and the verdict lines hold every pair.
SHOWN = framework_pairs(frameworks.NAMES[:2])[0]


def in_table(table):
    """The framework pairs whose rows ``table`` holds (a table of point_ratios or pair_summary):
    [(pair, its rows)]."""
    found = []
    for pair in framework_pairs(list(frameworks.FRAMEWORKS)):
        if set(pair.modes) <= set(table.columns):
            rows = table[table[pair.modes].notna().all(axis=1)]
            if len(rows):
                found.append((pair, rows))
    return found


def of_row(row):
    """The framework pair of a ratio table's row: the one whose mode columns it fills."""
    for pair in framework_pairs(list(frameworks.FRAMEWORKS)):
        if all(name in row and not pd.isna(row[name]) for name in pair.modes):
            return pair
    raise ValueError("a row of no framework pair")


def shown(table):
    """The rows of ratio table ``table`` of the pair SHOWN."""
    return table[table[SHOWN.modes].notna().all(axis=1)] if len(table) else table


def pair_up(frame, key, first, second, on, carry=(), suffixes=None):
    """Rows of ``frame`` with ``key == first`` joined to rows with ``key == second`` on the
    columns ``on``; ``suffixes`` (default ``_<first>`` / ``_<second>``) on each side's time,
    status, version, mode and the ``carry`` columns; ``ratio`` = first time / second time."""
    suffixes = suffixes or ("_" + str(first), "_" + str(second))
    frame = summary.with_reported(frame)
    columns = on + SIDE + list(carry)
    columns = list(dict.fromkeys(column for column in columns if column != key))
    left = frame[frame[key] == first][columns]
    right = frame[frame[key] == second][columns]
    merged = left.merge(right, on=on, suffixes=suffixes)
    merged["ratio"] = [
        _ratio(a, b) for a, b in zip(merged["reported_ms" + suffixes[0]],
                                     merged["reported_ms" + suffixes[1]])
    ]
    return merged


def side(row, suffix):
    """One side of a paired row (its columns ending in ``suffix``) for the judge; a sample count
    that is missing is 0."""
    count = row["n_samples" + suffix]
    return Side(row["status" + suffix], row["reported_ms" + suffix],
                0 if count is None or pd.isna(count) else int(count),
                row["replicate_samples" + suffix])


def _ratio(numerator, denominator):
    if pd.isna(numerator) or pd.isna(denominator) or float(denominator) <= 0:
        return None
    return float(numerator) / float(denominator)


def framework_ratios(frame, carry=(), pair=SHOWN):
    """Top time / bottom time of framework pair ``pair`` for every pair of modes, per point
    (> 1: the top one slower): the one pairing of two frameworks' points (same scope, model and
    input); each side's columns end in its suffix (``_pt``, ``_tf``)."""
    on = scopes.SCOPE + scopes.MODEL_INPUT
    return pair_up(frame, "framework", pair.frameworks[0], pair.frameworks[1], on, carry,
                   pair.suffixes)


def mode_speedups(frame):
    """Eager time / mode time per framework, for every mode but eager (> 1: the mode is faster);
    ``status``: the mode's, or eager's where only eager's point is not ok (why a ratio is N/A)."""
    on = [key for key in scopes.TABLE_KEYS if key != "mode"] + scopes.MODEL_INPUT
    frame = summary.with_reported(frame)
    pairs = []
    for mode in frame.loc[frame["mode"] != "eager", "mode"].drop_duplicates():
        pair = pair_up(frame[frame["mode"].isin(["eager", mode])], "mode", "eager", mode, on)
        pair["mode"] = mode
        pair["status"] = [
            eager if own == "ok" else own
            for own, eager in zip(pair["status_%s" % mode], pair["status_eager"])
        ]
        pairs.append(pair)
    if not pairs:
        return pd.DataFrame(columns=on + ["mode", "ratio", "status"])
    return pd.concat(pairs, ignore_index=True)


def cross_era(frame, carry=(), newest_only=False):
    """Same cell and point in each later era (``newest_only``: the newest) and the oldest of the
    frame (envs/eras.yaml's order): new time / old time (< 1: the newer era faster); ``era_new``,
    ``era_old`` name them, and each side's columns (and ``carry``) end in ``_new`` / ``_old``."""
    on = [key for key in scopes.TABLE_KEYS if key != "era"] + scopes.MODEL_INPUT
    names = eras.in_time_order(frame["era"].unique()) if len(frame) else []
    tables = []
    for new in names[1:][-1:] if newest_only else names[1:]:
        pairs = pair_up(frame, "era", new, names[0], on, carry, ("_new", "_old"))
        pairs.insert(0, "era_new", new)
        pairs.insert(1, "era_old", names[0])
        tables.append(pairs)
    if not tables:
        return pd.DataFrame(columns=["era_new", "era_old"] + on + ["ratio"])
    return pd.concat(tables, ignore_index=True)


# The deployment view: each C/C++ mode against the in-process Python run of the same graph
# (the same artifact loaded in Python, and the graph mode it was exported from), and the two
# frameworks' deployed modes against each other.
PYTHON_COST_PAIRS = [(mode.framework, python_mode, mode.name)
                     for mode in modes.MODES if mode.kind == modes.DEPLOYED_CPP
                     for python_mode in modes.same_graph_in_python(mode)]
DEPLOYED_PAIRS = [(pytorch_mode, tensorflow_mode)
                  for kind in (modes.DEPLOYED_CPP, modes.DEPLOYED_PYTHON)
                  for pytorch_mode in modes.mode_names(SHOWN.frameworks[0], (kind,))
                  for tensorflow_mode in modes.mode_names(SHOWN.frameworks[1], (kind,))]


def python_costs(frame):
    """Python time / C/C++ time of the same graph per point (> 1: the C/C++ runner faster),
    for each pair of PYTHON_COST_PAIRS that ran; columns ``python_mode``, ``cpp_mode``."""
    on = [key for key in scopes.TABLE_KEYS if key != "mode"] + scopes.MODEL_INPUT
    frame = summary.with_reported(frame)
    pairs = []
    for framework, python_mode, cpp_mode in PYTHON_COST_PAIRS:
        rows = frame[(frame["framework"] == framework)
                     & frame["mode"].isin([python_mode, cpp_mode])]
        if set(rows["mode"]) != {python_mode, cpp_mode}:
            continue
        pair = pair_up(rows, "mode", python_mode, cpp_mode, on)
        pair["python_mode"], pair["cpp_mode"] = python_mode, cpp_mode
        pairs.append(pair)
    if not pairs:
        return pd.DataFrame(columns=on + ["python_mode", "cpp_mode", "ratio"])
    return pd.concat(pairs, ignore_index=True)


def deployed_ratios(frame):
    """PyTorch deployed time / TensorFlow deployed time per point (> 1: PyTorch slower), for
    the C/C++ modes and the Python loaders of the same artifacts."""
    ratios = framework_ratios(frame)
    keep = pd.Series([(a, b) in DEPLOYED_PAIRS for a, b in zip(ratios["mode_pt"],
                                                               ratios["mode_tf"])],
                     index=ratios.index, dtype=bool)
    return ratios[keep]
