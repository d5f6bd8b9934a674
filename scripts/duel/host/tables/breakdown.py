"""Where a run's time went, from its own records: the shards, the reference manifests and the
run manifest. One home for the figure every change to the method's cost is judged on; the
spreadsheet's ``time`` sheet and the end-of-run lines both read it.

Parts, in seconds of job time (on one machine a timing cell takes every core, so jobs run one at
a time and add up to the run's wall time; with fewer threads per cell, or on a cluster, they
overlap, and the shares are of the job time):

- timed samples: every sample of every row (each replicate and attempt; timeit's samples are
  per call, so times ``number``): what the verdicts rest on;
- first calls: each point's untimed first call (a trace or compile cost, itself reported);
- inside points, untimed: the rest of each point's wall time (its input, one-off preparation
  such as a trace, warm-up calls);
- cell start-up: each cell process from its start to its first point (imports, model build,
  weights);
- cells, between points: the rest of each job (the canaries around points, output checks, the
  job's own process, shards, process exits);
- reference jobs: each reference job's wall time (its manifest's ``wall_s``);
- the rest: the run's wall time less all of the above (Snakemake, the merge, statistics,
  charts), only where the run's wall time is known.
"""
import glob
import json
import os
from collections import namedtuple

import numpy as np
import pandas as pd

from duel.cell import contract

from duel.host.plan import layout
from duel.host.tables import replicates

REPORTED = ("timed samples", "first calls")
PROCESS = list(contract.CELL_KEYS) + ["attempt"]


def _number(value, default=0.0):
    return default if value is None or pd.isna(value) else float(value)


def _timed_s(row):
    samples = row["samples"]
    if samples is None or (np.ndim(samples) == 0 and pd.isna(samples)):
        return 0.0
    return float(np.sum(samples)) * _number(row.get("number"), 1.0) / 1000.0


def reference_seconds(results_dir):
    """The wall time of every reference job whose manifest lies under ``results_dir``."""
    total = 0.0
    pattern = os.path.join(glob.escape(results_dir), layout.REFERENCES, "*", "*", "*.json")
    for path in glob.glob(pattern):
        try:
            with open(path) as handle:
                total += _number(json.load(handle).get("wall_s"))
        except (OSError, ValueError, AttributeError):
            continue
    return total


def as_processes(frame):
    """``frame`` with each row's ``mode`` replaced by the modes its process measured
    (``process_modes``), so that a process, and its job, is one key however many modes it ran."""
    return frame.assign(mode=frame["process_modes"].fillna(frame["mode"]))


def parts(frame, references_s=0.0, run_s=None):
    """The breakdown of the long table ``frame`` (every row of every shard): a frame with
    ``part``, ``seconds`` and ``share`` (of the run's wall time where known, else of the parts'
    sum), in the order of the module docstring."""
    timed = sum(_timed_s(row) for _, row in frame.iterrows())
    first = frame["first_call_ms"].fillna(0).astype(float).sum() / 1000.0
    in_points = frame["point_wall_s"].fillna(0).astype(float).sum()
    by_process = as_processes(frame)
    processes = by_process.drop_duplicates(PROCESS)
    startup = processes["startup_s"].fillna(0).astype(float).sum()
    jobs = by_process.drop_duplicates(list(contract.CELL_KEYS))
    job_wall = jobs["job_wall_s"].fillna(0).astype(float).sum()
    rows = [("timed samples", timed), ("first calls", first),
            ("inside points, untimed", max(0.0, in_points - timed - first)),
            ("cell start-up", startup),
            ("cells, between points", max(0.0, job_wall - startup - in_points)),
            ("reference jobs", references_s)]
    measured = sum(seconds for _, seconds in rows)
    if run_s is not None:
        rows.append(("the rest (Snakemake, merge, statistics, charts)",
                     max(0.0, run_s - measured)))
    # Jobs that ran side by side (cells of fewer threads than cores) add up to more than the
    # run's wall time: then each part is a share of the job time.
    total = run_s if run_s and run_s >= measured else measured
    table = pd.DataFrame(rows, columns=["part", "seconds"])
    table["share"] = table["seconds"] / total if total else np.nan
    return table


def reported_share(table):
    """The share of the time that went to reported figures (timed samples and first calls)."""
    return float(table.loc[table["part"].isin(REPORTED), "share"].sum())


def lines(table, run_s=None):
    """The breakdown in a few lines of at most 80 columns; none for a run without the records
    (a table written before they were kept)."""
    if not table["seconds"].iloc[:-1 if run_s is not None else None].sum():
        return []
    head = ("Time: %.0f s" % run_s) if run_s is not None else \
        "Time in jobs: %.0f s" % table["seconds"].sum()
    text = ["%s, %.0f%% of it producing reported figures (timed samples, first calls):"
            % (head, 100.0 * reported_share(table))]
    for _, row in table.iterrows():
        text.append("  %-48s %7.0f s %4.0f%%" % (row["part"], row["seconds"], 100.0 * row["share"]))
    return text


REASON_KINDS = {"host": "steal", "other": "other processes", "canary": "canary"}
# What a noisy run is, in one line, wherever a run is marked noisy (the store, its site).
NOISY_MEANING = ("A run is noisy where some of its points were still disturbed after their last "
                 "measurement (the host stole CPU time, other processes ran beside them, or the "
                 "canary slowed): verdicts resting on them are weaker and a rerun may differ.")
Disturbance = namedtuple("Disturbance", "points disturbed steal_share noisy")


def _still_disturbed(counted):
    """The counted rows still disturbed after their last measurement (ok rows with a reason)."""
    return counted[counted["disturbed"].notna() & (counted["status"] == "ok")]


def disturbance(frame):
    """How noisy the host of a run was, from all its rows (every attempt): the one rule that the
    run's end and the store both apply. ``points``: the rows that count (a point in one
    process); ``disturbed``: those still disturbed after their last measurement; ``steal_share``:
    the host's steal over the CPU time of the counted ok rows; ``noisy``: any point still
    disturbed. ``disturbed`` and ``noisy`` are None for rows no judge marked (written before
    points were judged), ``steal_share`` where no steal was recorded: unknown, not quiet."""
    counted = replicates.counted(frame)
    judged = "disturbance_rule" in counted.columns and counted["disturbance_rule"].notna().any()
    disturbed = len(_still_disturbed(counted)) if judged else None
    ok = counted[counted["status"] == "ok"]
    steal_share = None
    if "steal_ms" in ok.columns and ok["steal_ms"].notna().any():
        capacity = (ok["point_wall_s"].astype(float) * 1000.0
                    * ok["threads"].fillna(1).astype(float).clip(lower=1)).sum()
        if capacity > 0:
            steal_share = float(ok["steal_ms"].fillna(0).astype(float).sum() / capacity)
    return Disturbance(int(len(counted)), disturbed, steal_share,
                       None if disturbed is None else disturbed > 0)


def attempt_lines(frame):
    """What the run did with disturbed points (duel/cell/attempts.py): how many were measured
    again in their process or in a fresh one, and, where the host was noisy (``disturbance``),
    one line saying so and that its verdicts are weaker."""
    if frame["attempt"].isna().all():
        return []
    counted = replicates.counted(frame)
    found = disturbance(frame)
    fresh = int((counted["attempt"].fillna(1) > 1).sum())
    again = int((counted["remeasure"].fillna(0) > 0).sum()) if "remeasure" in counted else 0
    if not (fresh or again or found.noisy):
        return []
    kept = len(frame) - found.points
    text = ["Disturbed: %d of %d points measured again in their process, %d in a fresh process "
            "(%d disturbed row%s kept, not counted)."
            % (again, found.points, fresh, kept, "" if kept == 1 else "s")]
    if found.noisy:
        reasons = pd.Series([REASON_KINDS.get(reason.split(" ")[0], reason)
                             for line in _still_disturbed(counted)["disturbed"]
                             for reason in str(line).split("; ")]).value_counts()
        text.append("Noisy host: %d of %d points (%.0f%%) were still disturbed after their last "
                    "measurement (%s); %s. Their figures count, marked disturbed, so verdicts "
                    "resting on them are weaker and a rerun may differ."
                    % (found.disturbed, found.points, 100.0 * found.disturbed / found.points,
                       ", ".join("%s %d" % item for item in reasons.items()), host_noise(frame)))
    return text


def host_noise(frame):
    """The host's steal over the cells' CPU time and its canary's typical spread, in words."""
    parts = []
    steal_share = disturbance(frame).steal_share
    if steal_share is not None:
        parts.append("host steal %.1f%% of the cells' CPU time" % (100.0 * steal_share))
    if "canary_spread" in frame.columns and frame["canary_spread"].notna().any():
        spread = float(np.expm1(frame["canary_spread"].median()))
        parts.append("canary spread %.1f%%" % (100.0 * spread))
    return ", ".join(parts) or "no record of the host's steal or canary"
