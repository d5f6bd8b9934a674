"""Which verdicts are still open after a run's first rounds, and how many processes each gets.

A run measures every cell in ``replicates`` processes; then a PyTorch/TensorFlow verdict is
*open* (undecided) when its interval (statistics.judge) reaches across an edge of the band of
differences too small to call (``min_effect``): more processes can still show a difference or
show that it lies within the band. Decided verdicts (faster, equivalent) get nothing more; a
point that is not ok on either side is not measured again.

Each open point gets the processes it needs, not all up to ``max_replicates``: taking its
ratio and the spread of its processes as the truth, the chance that it is decided at n
processes a side (conditional power: its interval narrows as 1 / sqrt(n), its ratio moves by
the new processes' share) gives its plan, the fewest processes at which that chance reaches
one half (``needed``). A point whose chance stays below FUTILE even at ``max_replicates`` is
*futile* and stops now (stochastic curtailment): what its processes would cost goes to the
points that can still be decided. The plan is an expectation from the first rounds' own
figures, not a promise; the verdict is then made once, on every process, by the same judge as
any other.

One look, after the first rounds: with three to six processes a side, Welch's t has two to ten
degrees of freedom, and splitting the 5% over several looks (alpha spending) widens every
interval by more than the processes a second look would save; one look keeps the error rate
of a single test of the points it extends.

The settling rounds also take their samples per point from the first rounds' own noise
(tables/variance.py): each extended cell's ratio of a sample's variance to the variance
between processes replaces ``duel.noise_ratio``.
"""
import json
import math

import numpy as np
import pandas as pd
from scipy.stats import norm

from duel.cell import contract, modes

from duel.host.tables import variance
from duel.host.verdicts import pairs, statistics

VERSION = 2
# The noise ratio a settling round may take from the first rounds: a cell of a few points
# estimates it roughly, so it is held within a factor of twenty of 1.
NOISE_RATIO_LIMITS = (0.05, 20.0)
# Below this chance of being decided at max_replicates, an open point stops (futility).
FUTILE = 0.1


def is_open(low, high, min_effect):
    """Whether an interval (low, high) reaches across an edge of the band within ``min_effect``
    of 1 (no interval: not open; more processes would not give one)."""
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return False
    below, above = statistics.equivalence_band(min_effect)
    return (low < below < high) or (low < above < high)


def open_points(points, min_effect):
    """The open verdicts of the point table ``points`` (summary.with_reported): a frame of
    statistics.point_ratios' rows whose interval is open."""
    ratios = statistics.point_ratios(points, min_effect=min_effect)
    if ratios.empty:
        return ratios
    chosen = [is_open(low, high, min_effect)  # an open interval is never clear
              for low, high in zip(ratios["ci_low"], ratios["ci_high"])]
    return ratios[chosen].reset_index(drop=True)


def chance_to_decide(log_ratio, spread, now, count, min_effect):
    """The chance that a point with ``now`` processes a side, whose log ratio is ``log_ratio``
    and whose processes' pairs spread by ``spread`` (a standard deviation of the log ratio of
    one pair), is decided (faster or equivalent) at ``count`` processes a side, were that
    ratio the truth: the final ratio's estimate moves by the new processes' share
    (conditional power)."""
    edge = math.log(1.0 + min_effect)
    half = float(statistics.t_quantile(2 * count - 2)) * spread / math.sqrt(count)
    moves = spread * math.sqrt(count - now) / count
    if moves <= 0:
        return 0.0
    beyond = (norm.cdf((log_ratio - edge - half) / moves)
              + norm.cdf((-edge - half - log_ratio) / moves))
    inside = 0.0
    if edge > half:
        inside = (norm.cdf((edge - half - log_ratio) / moves)
                  - norm.cdf((half - edge - log_ratio) / moves))
    return beyond + inside


def needed(row, max_replicates, min_effect):
    """The processes per side an open point is planned for: the fewest at which it is as likely
    as not to be decided (chance_to_decide, its own ratio and spread taken as the truth), else
    ``max_replicates``; None (futile) where even ``max_replicates`` would decide it less often
    than FUTILE."""
    now = int(min(row["replicates" + suffix] for suffix in pairs.of_row(row).suffixes))
    if now < 2 or not row["ci_low"] > 0:
        return None
    log_ratio = math.log(row["ratio"])
    spread = (math.log(row["ci_high"] / row["ci_low"]) / 2.0
              / float(statistics.t_quantile(2 * now - 2)) * math.sqrt(now))
    for count in range(now + 1, int(max_replicates) + 1):
        if chance_to_decide(log_ratio, spread, now, count, min_effect) >= 0.5:
            return count
    if int(max_replicates) > now and chance_to_decide(
            log_ratio, spread, now, int(max_replicates), min_effect) >= FUTILE:
        return int(max_replicates)
    return None


def cells_to_extend(open_ratios):
    """Per cell (CELL_KEYS less the replicate), the points 'BxL:method' to measure again and
    the processes each is planned for (``processes``: point -> count): a list of dicts with
    the cell's keys, ``points`` (sorted) and ``processes``."""
    wanted = {}
    for _, row in open_ratios.iterrows():
        point = "%dx%d:%s" % (row["batch_size"], row["seq_len"], row["method"])
        pair = pairs.of_row(row)
        for framework, suffix in zip(pair.frameworks, pair.suffixes):
            key = (row["era"], row["device"], framework, row["mode" + suffix], row["precision"],
                   row["task"], row["model"])
            wanted.setdefault(key, {})[point] = int(row["processes"])
    keys = [name for name in contract.CELL_KEYS if name != "replicate"]
    return [dict(zip(keys, key), points=sorted(points), processes=points)
            for key, points in sorted(wanted.items())]


def _noise_ratios(long_frame, cells):
    """Each extended cell's noise ratio from the first rounds (tables/variance.py), where its
    processes differed beyond their samples; a cell without one keeps duel.noise_ratio."""
    if long_frame is None or not cells:
        return
    components = variance.point_components(long_frame)
    keys = [name for name in contract.CELL_KEYS if name != "replicate"]
    for cell in cells:
        mine = components[np.logical_and.reduce(
            [components[name].astype(str) == str(cell[name]) for name in keys])]
        ratio = variance.noise_ratio(mine)
        if not pd.isna(ratio):
            cell["noise_ratio"] = float(np.clip(ratio, *NOISE_RATIO_LIMITS))


def plan(points, replicates, max_replicates, min_effect, long_frame=None):
    """The record the workflow's extra rounds are planned from (written as JSON): the open
    verdicts, each with the processes it is planned for (``processes``, null: futile), and the
    cells that measure them again. ``long_frame``: the first rounds' rows, whose noise sizes
    the settling rounds' samples."""
    chosen = open_points(points, min_effect)
    chosen["processes"] = pd.Series([needed(row, max_replicates, min_effect)
                                     for _, row in chosen.iterrows()], dtype=object,
                                    index=chosen.index)
    columns = ["model", "batch_size", "seq_len", "method", "ratio", "ci_low", "ci_high",
               "processes"]
    cells = cells_to_extend(chosen[chosen["processes"].notna()] if len(chosen) else chosen)
    _noise_ratios(long_frame, cells)
    return {
        "version": VERSION,
        "replicates": int(replicates),
        "max_replicates": int(max_replicates),
        "min_effect": float(min_effect),
        "open": [dict((name, _plain(row[name])) for name in pairs.of_row(row).modes + columns)
                 for _, row in chosen.iterrows()],
        "cells": cells,
    }


def _plain(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def read(path):
    """The plan written by the workflow's ``open_points`` step."""
    with open(path) as handle:
        return json.load(handle)


PROCESS_KEYS = [name for name in contract.CELL_KEYS if name not in ("mode", "replicate")]


def extra_cells(record):
    """(Cell, points) for every extra process the plan ``record`` asks for: a cell's process r
    measures the points planned for r processes or more (a record without ``processes``: all
    of them, up to max_replicates). The modes that share a process (modes.process_groups) are
    one cell, whose points name their mode ('function:1x8:duel')."""
    wanted = {}
    for entry in record["cells"]:
        planned = entry.get("processes") or dict(
            (point, record["max_replicates"]) for point in entry["points"])
        for replicate in range(record["replicates"] + 1, max(planned.values()) + 1):
            points = [point for point in entry["points"] if planned[point] >= replicate]
            key = tuple(entry[name] for name in PROCESS_KEYS) + (replicate,)
            wanted.setdefault(key, []).append((entry["mode"], points))
    cells = []
    for key in sorted(wanted, key=lambda key: (key[-1],) + key[:-1]):
        keys = dict(zip(PROCESS_KEYS, key[:-1]), replicate=key[-1])
        by_mode = dict(wanted[key])
        for group in modes.process_groups(keys["framework"], [mode for mode, _ in wanted[key]]):
            points = by_mode[group[0]] if len(group) == 1 else [
                "%s:%s" % (mode, point) for mode in group for point in by_mode[mode]]
            cells.append((contract.Cell(mode=modes.joined(group), **keys), points))
    return cells


def cell_arguments(record, cell):
    """run_cell's arguments for the settling process ``cell`` (a contract.Cell): its points and,
    where the first rounds measured one, its modes' noise ratio (the largest: never fewer
    samples than a mode of it would take alone); None where the plan has no such process."""
    for extra, points in extra_cells(record):
        if extra == cell:
            ratios = [entry["noise_ratio"] for entry in record["cells"]
                      if entry["mode"] in modes.members(cell.mode)
                      and entry.get("noise_ratio") is not None
                      and all(str(entry[name]) == str(getattr(cell, name))
                              for name in PROCESS_KEYS)]
            found = ["--points", ",".join(points)]
            if ratios:
                found += ["--noise-ratio", "%.6g" % max(ratios)]
            return found
    return None


def lines(record):
    """What the settling rounds did, for the end of a run: nothing when none was open."""
    if not record or not record["open"]:
        return []
    planned = [entry.get("processes", record["max_replicates"]) for entry in record["open"]]
    going = [count for count in planned if count is not None]
    text = "Settling: %d verdict(s) undecided after %d processes per cell" % (
        len(record["open"]), record["replicates"])
    if going:
        first, last = record["replicates"] + 1, max(going)
        processes = "process %d" % first if first == last else "processes %d-%d" % (first, last)
        text += "; %d ran again in %s of %d cells" % (len(going), processes,
                                                       len(record["cells"]))
    futile = len(planned) - len(going)
    if futile:
        text += "; %d stopped: %d processes would not decide them" % (
            futile, record["max_replicates"])
    return [text + "."]
