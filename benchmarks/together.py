#!/usr/bin/env python
"""Modes measured in one process against each measured alone, side by side in fresh processes.

A process per framework x model measures its modes' points side by side (duel/cell/modes.py
process_groups). That is only sound where a mode beside another gives the figure it gives
alone: TensorFlow eager after ``function`` has traced, say, or with another mode's graphs and
allocator pools resident. So the rounds alternate, each in fresh processes: the modes together
in one process, then each mode alone in a process of its own (the order turning per round).
Per mode and point it reports the ratio together / alone of the median of the processes'
figures with a 95% interval between processes (Welch, on logs), and of peak host memory.

    .venv/bin/python benchmarks/together.py --framework tensorflow --modes eager,function \\
        --model config/models/distilbert-base-uncased.json --rounds 4 --output /tmp/together

Writes ``together.json`` in the output folder and prints a table.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
FIGURES = ("median", "peak_host_rss_mb")


def cell_command(args, mode, output):
    return [sys.executable, "-m", "duel.cell.commands.run_cell", "--framework", args.framework,
            "--mode", mode, "--model-config", args.model, "--batch-sizes", args.batch_sizes,
            "--sequence-lengths", args.sequence_lengths, "--output", output]


def run_rounds(args):
    """Every round's processes, alternating; returns {process name: wall seconds}."""
    env = dict(os.environ, PYTHONPATH=os.path.join(CHECKOUT, "scripts"))
    together = "+".join(args.modes)
    walls = {}
    for index in range(args.rounds):
        kinds = [together] + list(args.modes)
        turn = index % len(kinds)
        for kind in kinds[turn:] + kinds[:turn]:
            name = "r%d-%s" % (index + 1, kind)
            output = os.path.join(args.output, name + ".parquet")
            if os.path.exists(output):
                continue
            began = time.time()
            with open(os.path.join(args.output, name + ".log"), "w") as log:
                subprocess.run(cell_command(args, kind, output), env=env, stderr=log,
                               stdout=log, check=True)
            walls[name] = time.time() - began
            print("%s: %.0f s" % (name, walls[name]), file=sys.stderr)
    return walls


def read_rows(output):
    frames = []
    for name in sorted(os.listdir(output)):
        if name.endswith(".parquet"):
            frame = pd.read_parquet(os.path.join(output, name))
            frame["round"], frame["kind"] = name.split("-", 1)[0], (
                "together" if "+" in name else "alone")
            frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["counted"].fillna(True).astype(bool) & (frame["status"] == "ok")]


def ratio(together, alone, log=True):
    """together / alone of the processes' figures: (ratio of medians, 95% low, high), Welch's
    interval on logs; for memory (``log`` False) the difference in MiB."""
    a, b = np.asarray(together, float), np.asarray(alone, float)
    if log:
        a, b = np.log(a), np.log(b)
    difference = a.mean() - b.mean()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if va + vb else 1
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    points = (difference, difference - half, difference + half)
    return tuple(float(np.exp(value)) if log else float(value) for value in points)


def analyse(output):
    frame = read_rows(output)
    rows = []
    for (mode, batch, length), group in frame.groupby(["mode", "batch_size", "seq_len"]):
        together = group[group["kind"] == "together"]
        alone = group[group["kind"] == "alone"]
        if len(together) < 2 or len(alone) < 2:
            continue
        time_ratio = ratio(together["median"], alone["median"])
        memory = ratio(together["peak_host_rss_mb"], alone["peak_host_rss_mb"], log=False)
        rows.append({
            "mode": mode, "batch_size": int(batch), "seq_len": int(length),
            "processes": [len(together), len(alone)],
            "time_ratio": time_ratio, "time_apart": not time_ratio[1] <= 1.0 <= time_ratio[2],
            "memory_mib": memory, "memory_alone_mib": float(alone["peak_host_rss_mb"].median()),
        })
    return {"cpu": str(frame["cpu_model"].iloc[0]), "points": rows}


def table(result):
    lines = ["| mode | point | time together / alone (95%) | peak memory together - alone, "
             "MiB (95%) | alone, MiB |", "| --- | --- | --- | --- | --- |"]
    for row in result["points"]:
        lines.append("| %s | %dx%d | %.3f (%.3f-%.3f)%s | %+.0f (%+.0f to %+.0f) | %.0f |" % (
            row["mode"], row["batch_size"], row["seq_len"], *row["time_ratio"],
            " apart" if row["time_apart"] else "", *row["memory_mib"], row["memory_alone_mib"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", default="tensorflow")
    parser.add_argument("--modes", default="eager,function", type=lambda text: text.split(","))
    parser.add_argument("--model", default=os.path.join(CHECKOUT, "config", "models",
                                                        "distilbert-base-uncased.json"))
    parser.add_argument("--batch-sizes", default="1,2")
    parser.add_argument("--sequence-lengths", default="8,64,128")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--output", required=True)
    parser.add_argument("--analyse", action="store_true", help="no new processes")
    args = parser.parse_args(argv)
    os.makedirs(args.output, exist_ok=True)
    walls = {} if args.analyse else run_rounds(args)
    result = analyse(args.output)
    result.update(framework=args.framework, modes=args.modes, model=args.model,
                  rounds=args.rounds, walls=walls)
    with open(os.path.join(args.output, "together.json"), "w") as handle:
        json.dump(result, handle, indent=1)
    print(table(result))


if __name__ == "__main__":
    main()
