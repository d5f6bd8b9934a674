"""What a finished run says at its end, on the console and in the merge log: one home for it.

A failed point is data (a row with its status and message), so a run whose points failed still
ends well for Snakemake; these lines make sure it never ends silent. ``lines`` reads the merged
table; the workflow's ``onsuccess`` prints ``lines_of_run`` and the merge writes the same lines
to its log.
"""
import os

import numpy as np
import pandas as pd

from duel.cell import contract, environment

from duel.host.plan import layout
from duel.host.tables import breakdown, replicates, scopes, summary, variance
from duel.host.verdicts import generation, pairs, settle, statistics

# How many distinct failure messages are shown; the count says how many there are in all.
SHOWN_MESSAGES = 3


def lines(frame):
    """The end-of-run lines of the merged table ``frame``: its counted rows' statuses, failures
    and attempts (one row per point and replicate)."""
    return _status_lines(replicates.counted(frame)) + breakdown.attempt_lines(frame)


def _status_lines(frame):
    counts = frame["status"].value_counts()
    total = len(frame)
    failed = int(sum(counts.get(status, 0) for status in contract.FAILED))
    parts = ["%d %s" % (counts[status], status) for status in contract.STATUSES
             if counts.get(status, 0)]
    text = ["Duel: %d points: %s." % (total, ", ".join(parts))]
    if not failed:
        return text
    text[0] += " %d of %d points FAILED: their rows hold the status and the message, the " \
               "cells' logs (results/logs/cells/) the tracebacks." % (failed, total)
    bad = frame[frame["status"].isin(contract.FAILED)]
    firsts = bad.drop_duplicates("message")
    for _, row in firsts.head(SHOWN_MESSAGES).iterrows():
        same = int((bad["message"] == row["message"]).sum())
        text.append("  %s %s %s %dx%d (%s, %d point%s): %s"
                    % (row["model"], row["framework"], row["mode"], row["batch_size"],
                       row["seq_len"], row["status"], same, "" if same == 1 else "s",
                       contract.first_line(row["message"] or "") or "(no message)"))
    if len(firsts) > SHOWN_MESSAGES:
        text.append("  ... and %d other messages" % (len(firsts) - SHOWN_MESSAGES))
    return text


# How many of the largest clear differences the verdict shows.
SHOWN_DIFFERENCES = 3


def _modes(row, framework_pair=None):
    """'PyTorch eager vs TensorFlow function' of a ratio table's row."""
    framework_pair = framework_pair or pairs.of_row(row)
    return " vs ".join("%s %s" % (label, row[mode]) for label, mode in zip(
        framework_pair.labels, framework_pair.modes))


def _pair_lines(pair, framework_pair):
    """The lines of one pair_summary row of ``framework_pair``: its counts, geometric mean and
    processes."""
    scope = " ".join(str(pair[key]) for key in scopes.SCOPE)
    geomean = "%.2f" % pair["geomean_ratio"] if pd.notna(pair["geomean_ratio"]) else "n/a"
    if pd.notna(pair.get("geomean_low")) and pd.notna(pair.get("geomean_high")):
        geomean += " [%.2f, %.2f]" % (pair["geomean_low"], pair["geomean_high"])
    text = ["  %s (%s):" % (_modes(pair, framework_pair), scope)]
    counts = statistics.pair_counts(pair, framework_pair)
    if not sum(count or 0 for _, count in counts):
        return text + ["    none of %d points ran on both sides: no verdict" % pair["points"]]
    return text + [
        "    of %d points: %s%s" % (pair["points"], ", ".join("%s %d" % count for count in counts),
                                    _disturbed_note(pair.get("disturbed"))),
        "    geometric-mean ratio %s, %d processes per cell (%s)"
        % (geomean, pair["replicates"], pair["interval"])]


def verdict_lines(results_dir=layout.RESULTS):
    """The verdict: per pair of modes compared, the points each framework clearly wins, those
    equivalent and those undecided (statistics.pair_counts), the geometric-mean ratio and the
    processes it rests on; then the largest clear differences and where the files are. From
    results/statistics/ (none before it exists)."""
    try:
        pair_table = pd.read_csv(os.path.join(results_dir, layout.PAIRS))
        ratios = pd.read_csv(os.path.join(results_dir, layout.RATIOS))
    except (OSError, ValueError):
        return []
    text = []
    for framework_pair, rows in pairs.in_table(pair_table) or [(pairs.SHOWN, pair_table)]:
        top, bottom = framework_pair.labels
        text.append("Verdict (%s time / %s time; < 1: %s faster):" % (top, bottom, top))
        for _, pair in rows.iterrows():
            text += _pair_lines(pair, framework_pair)
    clear = ratios[ratios["clear"] == "yes"].copy()
    if len(clear):
        clear["size"] = np.abs(np.log(clear["ratio"].astype(float)))
        text.append("  Largest clear differences:")
        for _, row in clear.sort_values("size", ascending=False).head(SHOWN_DIFFERENCES).iterrows():
            text.append("    %s %dx%d, %s: %.2f [%.2f, %.2f]%s"
                        % (row["model"], row["batch_size"], row["seq_len"], _modes(row),
                           row["ratio"], row["ci_low"], row["ci_high"],
                           " (disturbed)" if pd.notna(row.get("disturbed")) else ""))
    try:
        text += generation.lines(pd.read_csv(os.path.join(results_dir, layout.GENERATION)))
    except (OSError, ValueError):
        pass
    text.append("Files: %s (spreadsheet), %s, %s"
                % (os.path.join(results_dir, layout.SPREADSHEET),
                   os.path.join(results_dir, layout.STATISTICS_PAGE),
                   os.path.join(results_dir, layout.PLOTS)))
    return text


def _counted_rows(results_dir):
    """The counted rows of the merged table in ``results_dir``; None without a table."""
    path = os.path.join(results_dir, layout.SUMMARY)
    if not os.path.exists(path):
        return None
    return replicates.counted(summary.read_summary(path))


def strict_refusal(results_dir=layout.RESULTS):
    """Why a strict run exits 1, in one line: its failed points (error, oom) and the points
    still disturbed after their last measurement, from the merged table; None when there are
    none (or no table)."""
    frame = _counted_rows(results_dir)
    if frame is None:
        return None
    failed = int(frame["status"].isin(contract.FAILED).sum())
    disturbed = int(frame.loc[frame["status"] == "ok", "disturbed"].notna().sum())
    counts = ["%d %s points" % (count, what) for count, what in
              ((failed, "failed"), (disturbed, "still disturbed")) if count]
    if not counts:
        return None
    return "strict: %s, so this run exits with status 1" % " and ".join(counts)


def lines_of_run(shards, results_dir=layout.RESULTS, run_s=None):
    """The end-of-run lines of the run whose merged table is in ``results_dir``, or none when
    that table is missing or older than one of the run's ``shards`` (a run whose targets
    stopped before the merge); ``run_s``: the run's wall time, where known."""
    path = os.path.join(results_dir, layout.SUMMARY)
    if not os.path.exists(path):
        return []
    merged = os.stat(path).st_mtime
    if any(os.path.exists(shard) and os.stat(shard).st_mtime > merged for shard in shards):
        return []
    return _run_lines(summary.read_summary(path), results_dir, run_s)


def _run_lines(frame, results_dir, run_s):
    times = breakdown.parts(frame, breakdown.reference_seconds(results_dir), run_s)
    return verdict_lines(results_dir) + settle_lines(frame, results_dir) + lines(frame) + \
        breakdown.lines(times, run_s) + variance.lines(frame)


def finished_run(results_dir, run_s=None):
    """What ``duel show`` says of the finished run in ``results_dir`` (its merged table read
    here; an unreadable one raises): its end-of-run lines (``run_s``: its wall time, where
    known), its counted points and how many of them failed."""
    frame = summary.read_summary(os.path.join(results_dir, layout.SUMMARY))
    status = replicates.counted(frame)["status"]  # a disturbed row that ran again is no point
    return (_run_lines(frame, results_dir, run_s), len(status),
            int(status.isin(contract.FAILED).sum()))


def unfinished_lines(shards):
    """A line per cell of the run that began and left no shard, saying where it ran (the first
    line of its log): a cell on a node that was lost, or a job that was killed."""
    text = []
    for shard in shards:
        path = layout.cell_log(shard)
        if os.path.exists(shard) or not os.path.exists(path):
            continue
        with open(path, errors="replace") as handle:
            first = handle.readline().rstrip("\n")
        if first.startswith(environment.RUNS_ON):
            text.append("Duel: cell %s did not finish: it ran on %s; its log: %s"
                        % (layout.cell_of(shard), first[len(environment.RUNS_ON):], path))
    return text


def _disturbed_note(count):
    """', 2 of them disturbed' where points stayed disturbed (a table without the count: '')."""
    if count is None or pd.isna(count) or not int(count):
        return ""
    return ", %d of them disturbed" % int(count)


def settle_lines(frame, results_dir=layout.RESULTS):
    """What the settling rounds did, when the merged ``frame`` holds the processes the plan
    asked for, also when every open point stopped as futile (a plan left by an earlier run is
    not this run's)."""
    path = os.path.join(results_dir, layout.OPEN_POINTS)
    if not os.path.exists(path):
        return []
    record = settle.read(path)
    planned = max([cell.replicate for cell, _ in settle.extra_cells(record)]
                  or [record["replicates"]])
    if frame["replicate"].astype(int).max() != planned:
        return []
    return settle.lines(record)
