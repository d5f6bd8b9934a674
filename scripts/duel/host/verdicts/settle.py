"""Which verdicts are still open after a run's first rounds, and so get more processes.

A run measures every cell in ``replicates`` processes; then a PyTorch/TensorFlow verdict is
*open* when its interval (statistics.judge) reaches across an edge of the band of differences
too small to call (``min_effect``): more processes can still make it clear, or show that it
lies within the band. Clear verdicts and intervals inside the band are settled and get nothing
more; a point that is not ok on either side is not measured again. An open point is measured
again in both of its cells (PyTorch's mode and TensorFlow's), in processes ``replicates + 1``
to ``max_replicates``, which measure only their cell's open points. One look after the first
rounds, and only then: a verdict is never re-judged round by round until it turns clear.
"""
import json

import pandas as pd

from duel.cell import contract

from duel.host.verdicts import pairs, statistics

VERSION = 1


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


def cells_to_extend(open_ratios):
    """Per cell (CELL_KEYS less the replicate), the sorted points 'BxL:method' to measure again:
    a list of dicts with the cell's keys and ``points``."""
    wanted = {}
    for _, row in open_ratios.iterrows():
        point = "%dx%d:%s" % (row["batch_size"], row["seq_len"], row["method"])
        for framework, suffix in zip(pairs.FRAMEWORKS, pairs.FRAMEWORK_SUFFIXES):
            key = (row["era"], row["device"], framework, row["mode" + suffix], row["precision"],
                   row["task"], row["model"])
            wanted.setdefault(key, set()).add(point)
    keys = [name for name in contract.CELL_KEYS if name != "replicate"]
    return [dict(zip(keys, key), points=sorted(points)) for key, points in sorted(wanted.items())]


def plan(points, replicates, max_replicates, min_effect):
    """The record the workflow's extra rounds are planned from (written as JSON)."""
    chosen = open_points(points, min_effect)
    columns = ["model", "mode_pt", "mode_tf", "batch_size", "seq_len", "method", "ratio",
               "ci_low", "ci_high"]
    return {
        "version": VERSION,
        "replicates": int(replicates),
        "max_replicates": int(max_replicates),
        "min_effect": float(min_effect),
        "open": [dict((name, _plain(row[name])) for name in columns)
                 for _, row in chosen.iterrows()],
        "cells": cells_to_extend(chosen),
    }


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def read(path):
    """The plan written by the workflow's ``open_points`` step."""
    with open(path) as handle:
        return json.load(handle)


def extra_cells(record):
    """(Cell, points) for every extra process the plan ``record`` asks for."""
    cells = []
    for entry in record["cells"]:
        keys = dict((name, entry[name]) for name in contract.CELL_KEYS if name != "replicate")
        for replicate in range(record["replicates"] + 1, record["max_replicates"] + 1):
            cells.append((contract.Cell(replicate=replicate, **keys), entry["points"]))
    return cells


def lines(record):
    """What the settling rounds did, for the end of a run: nothing when none was open."""
    if not record or not record["open"]:
        return []
    first, last = record["replicates"] + 1, record["max_replicates"]
    processes = "process %d" % first if first == last else "processes %d-%d" % (first, last)
    return ["Settling: %d verdict(s) still open after %d processes per cell; their points ran "
            "again in %s of %d cells." % (len(record["open"]), record["replicates"], processes,
                                         len(record["cells"]))]
