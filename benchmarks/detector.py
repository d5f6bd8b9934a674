#!/usr/bin/env python
"""The disturbance detector as a measured instrument: its false alarms and its hits, here.

Real measuring processes (duel.cell.commands.run_cell, one point measured once: no re-measuring,
one process per job) time a fixed set of points, first with nothing beside them (the quiet
phase), then while a neighbour pinned to the last CPU the cells use keeps that core busy for a
known share of every 100 ms (``--duties``), phases interleaved in rounds so that a slow change
of the host lands on all of them alike. Reported, per phase and overall:

- false alarms: the share of quiet points the rule (conditions.disturbance) flagged;
- hits: among the neighbour's points that it moved by ``--moved`` or more against the same
  point's median in the quiet phase, the share flagged;
- the shift of the points it did not flag (against the same quiet median): what a missed
  neighbour does to a figure;
- why points were flagged (steal, other processes, canary), and the host's steal and canary
  spread over the whole benchmark, with the CPU model.

    .venv/bin/python benchmarks/detector.py --output /tmp/detector   # detector.json there
    .venv/bin/python benchmarks/detector.py --analyse /tmp/detector/detector.json

The raw rows of every process are kept in the JSON (the canary series among them: a few of them
are the unit tests' fixture, tests/data/canary/).
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq

from aa import busy_neighbour  # benchmarks/aa.py, beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)

RUN_CELL = ["-m", "duel.cell.commands.run_cell"]
CELLS = (("pytorch", "eager"), ("tensorflow", "function"))
PERIOD_S = 0.1
KEPT = ("framework", "mode", "batch_size", "seq_len", "method", "status", "median", "disturbed",
        "canary_score", "canary_before_ms", "canary_after_ms", "canary_center_ms",
        "canary_spread", "canary_calibration_ms", "steal_ms", "other_cpu_ms", "point_wall_s",
        "threads", "cpu_model")


def measure(framework, mode, args, folder):
    """One measuring process of one cell; its rows (KEPT columns)."""
    output = os.path.join(folder, "%s-%s-%d.parquet" % (framework, mode, time.time() * 1e6))
    command = [sys.executable, *RUN_CELL, "--framework", framework, "--mode", mode,
               "--model-config", os.path.join(CHECKOUT, "config", "models", args.model + ".json"),
               "--batch-sizes", args.batch_sizes, "--sequence-lengths", args.sequence_lengths,
               "--threads", str(args.threads), "--min-time-s", str(args.min_time_s),
               "--remeasures", "0", "--attempts", "1", "--output", output]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = pq.read_table(output).to_pylist()
    os.remove(output)
    return [dict((name, row.get(name)) for name in KEPT) for row in rows]


def run_phase(duty, args, folder):
    """Every cell once, with a neighbour busy ``duty`` of each period on the last CPU (0: none)."""
    neighbour = None
    cpu = max(os.sched_getaffinity(0))
    if duty:
        neighbour = multiprocessing.Process(
            target=busy_neighbour, args=(cpu, duty * PERIOD_S, (1 - duty) * PERIOD_S),
            daemon=True)
        neighbour.start()
    try:
        rows = []
        for framework, mode in CELLS:
            for row in measure(framework, mode, args, folder):
                row["duty"] = duty
                rows.append(row)
        return rows
    finally:
        if neighbour is not None:
            neighbour.terminate()
            neighbour.join()


def point_key(row):
    return (row["framework"], row["mode"], row["batch_size"], row["seq_len"], row["method"])


def reason_counts(rows):
    counts = {}
    for row in rows:
        for reason in (row["disturbed"] or "").split("; "):
            if reason:
                kind = {"host": "steal", "other": "other processes"}.get(reason.split(" ")[0],
                                                                         "canary")
                counts[kind] = counts.get(kind, 0) + 1
    return counts


def analyse(rows, moved):
    """The figures of the detector from every process's rows."""
    ok = [row for row in rows if row["status"] == "ok"]
    quiet = [row for row in ok if not row["duty"]]
    baseline = {}
    for row in quiet:
        baseline.setdefault(point_key(row), []).append(row["median"])
    baseline = dict((key, float(np.median(values))) for key, values in baseline.items())
    phases = {}
    for duty in sorted(set(row["duty"] for row in ok)):
        those = [row for row in ok if row["duty"] == duty]
        shifts = [row["median"] / baseline[point_key(row)] - 1 for row in those]
        flagged = [bool(row["disturbed"]) for row in those]
        big = [flag for flag, shift in zip(flagged, shifts) if shift >= moved]
        unflagged = [shift for flag, shift in zip(flagged, shifts) if not flag]
        phases["%g" % duty] = {
            "points": len(those), "flagged": int(sum(flagged)),
            "flagged_share": float(np.mean(flagged)) if those else None,
            "moved": len(big), "moved_flagged": int(sum(big)),
            "hit_share": float(np.mean(big)) if big else None,
            "median_shift": float(np.median(shifts)) if shifts else None,
            "unflagged_median_shift": float(np.median(unflagged)) if unflagged else None,
            "unflagged_max_shift": float(np.max(unflagged)) if unflagged else None,
            "reasons": reason_counts(those),
        }
    loud = [row for row in ok if row["duty"]]
    big = [bool(row["disturbed"]) for row in loud
           if row["median"] / baseline[point_key(row)] - 1 >= moved]
    capacity = sum(row["point_wall_s"] * 1000.0 * row["threads"] for row in ok)
    spreads = [row["canary_spread"] for row in ok if row["canary_spread"] is not None]
    return {
        "cpu": ok[0]["cpu_model"] if ok else None,
        "false_alarm_share": phases["0"]["flagged_share"] if "0" in phases else None,
        "quiet_points": phases["0"]["points"] if "0" in phases else 0,
        "hit_share": float(np.mean(big)) if big else None,
        "moved_points": len(big),
        "moved": moved,
        "steal_share": sum(row["steal_ms"] or 0.0 for row in ok) / capacity if capacity else None,
        "canary_spread_median": float(np.expm1(np.median(spreads))) if spreads else None,
        "phases": phases,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="folder for detector.json")
    parser.add_argument("--analyse", metavar="JSON", help="analyse a detector.json again")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duties", default="0.1,0.25,0.5,1.0",
                        help="the neighbour's busy shares of one core, one phase each")
    parser.add_argument("--quiet-per-round", type=int, default=2,
                        help="quiet phases per round (false alarms need many quiet points)")
    parser.add_argument("--model", default="distilbert-base-uncased")
    parser.add_argument("--batch-sizes", default="1,2")
    parser.add_argument("--sequence-lengths", default="8,32,64,128")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time-s", type=float, default=0.5)
    parser.add_argument("--moved", type=float, default=0.10,
                        help="a point the neighbour moved by this much counts for the hits")
    args = parser.parse_args(argv)
    if args.analyse:
        with open(args.analyse) as handle:
            result = json.load(handle)
        result.update(analyse(result["rows"], args.moved))
    else:
        if not args.output:
            parser.error("--output is required unless --analyse is given")
        os.makedirs(args.output, exist_ok=True)
        duties = [float(duty) for duty in args.duties.split(",")]
        rows, started = [], time.time()
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.rounds):
                for duty in [0.0] * args.quiet_per_round + duties:
                    rows += run_phase(duty, args, folder)
        result = {"settings": vars(args), "wall_s": time.time() - started, "rows": rows}
        result.update(analyse(rows, args.moved))
    path = os.path.join(args.output or os.path.dirname(args.analyse), "detector.json")
    with open(path, "w") as handle:
        json.dump(result, handle, indent=1)
    summary = dict((key, value) for key, value in result.items() if key != "rows")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
