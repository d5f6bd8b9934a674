"""The identity columns the reports group and pair by, and how a group names itself.

A *scope* is everything that must be equal for two numbers to be compared: era, device,
precision, task and method (SCOPE). What a chart or a pair compares within a scope is the
framework and the mode (COMPARED); a table of results is one scope and one of each
(TABLE_KEYS, in the order the sheets are named). Its rows are models and inputs (MODEL_INPUT).
"""
import pandas as pd

from duel.cell import contract, frameworks

from duel.host.tables import summary

SCOPE = ["era", "device", "precision", "task", "method"]
COMPARED = ["framework", "mode"]
TABLE_KEYS = SCOPE[:2] + COMPARED + SCOPE[2:]
MODEL_INPUT = ["model", "batch_size", "seq_len", "point"]
# How a point that has no time is shown: skipped is the 2019 sheets' N/A.
STATUS_LABELS = {"skipped": "N/A", "oom": "OOM", "error": "error", "killed": "killed",
                 "timeout": "timeout"}


def prepared(frame):
    """The point table of a merged frame, migrated (summary.migrated) first, with
    ``reported_ms`` and ``point``; a point table is returned as it is."""
    if "reported_ms" in frame.columns and "point" in frame.columns:
        return frame
    return summary.with_reported(summary.migrated(frame))


def status_label(status):
    """'N/A', 'OOM', 'error' (or 'missing' for a point that has no row at all)."""
    if status is None or pd.isna(status):
        return "missing"
    return STATUS_LABELS.get(status, str(status))


def series_label(framework, mode):
    return "%s %s" % (frameworks.label(framework), mode)


def file_stem(values):
    """A file name for a scope's values, e.g. 'current_cpu_fp32_inference_duel'.

    Config names never hold '_' (their pattern is ``[A-Za-z0-9][A-Za-z0-9._-]*``), so the name is
    unambiguous.
    """
    return "_".join(str(value) for value in values)


def versions(group):
    """'torch 2.13.0, TensorFlow 2.21.0': each framework's version in a group of rows."""
    found = []
    for framework, rows in group.groupby("framework", sort=True):
        name = frameworks.package(framework) if framework == "pytorch" else \
            frameworks.label(framework)
        version = rows["framework_version"].dropna()
        found.append("%s %s" % (name, version.iloc[0] if len(version) else "?"))
    return ", ".join(found)


def replicates_label(group):
    """'3 processes per point' (or '2-3 ...' where the cells differ) of a point table's rows."""
    counts = group["replicates"].dropna().astype(int) if "replicates" in group else []
    if not len(counts):
        return "1 process per point"
    low, high = int(counts.min()), int(counts.max())
    return "%s process%s per point" % (low if low == high else "%d-%d" % (low, high),
                                       "" if high == 1 else "es")


def interval_label(group):
    """What an interval of these rows saw: processes, or only the jitter inside one."""
    if "replicates" in group and group["replicates"].min() >= 2:
        return "over processes"
    return "within one process only"


def describe(group, values):
    """One line naming a scope, its software, its hardware and the processes behind each
    point, for a chart's title."""
    record = dict(zip(SCOPE, values))
    return "era %s (%s), %s, %s %s, method %s (%s per call) | %s | %s" % (
        record["era"], versions(group), record["device"], record["precision"], record["task"],
        record["method"], contract.reported_statistic(record["method"]), summary.hardware(group),
        replicates_label(group))
