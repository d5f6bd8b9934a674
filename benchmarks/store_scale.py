#!/usr/bin/env python
"""How the results store scales: 1,000 runs of the default grid's size, one history, one site.

Builds a store of ``--runs`` synthetic runs, each the default grid's rows (3 models x 3
framework-modes x 6 points x 3 processes = 162 rows, ``--samples`` timed samples each), through
the store's own add (archive.add: the same files, lock and renames as a real add; only the rows
are made up). Then times, each ``--repeat`` times in a fresh process as a user meets them,
``duel history`` for one point (and its query alone, in this process) and ``duel publish``
of the whole store. With ``--writers``, that many processes then add a run each to it at the
same moment, as many heads sharing one store on a cluster would: each one's time (most of it
waiting for the writer lock) and whether every run landed.

    .venv/bin/python benchmarks/store_scale.py --output DIR   # DIR/store-scale.json
    .venv/bin/python benchmarks/store_scale.py --output DIR --runs 200 --writers 2,8,32

Targets: history under 1 s, publish under 60 s.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)

from duel.cell import contract, environment  # noqa: E402
from duel.host.store import archive, questions  # noqa: E402

MODELS = ("bert-base-cased", "distilbert-base-uncased", "gpt2")
CELLS = (("pytorch", "eager"), ("tensorflow", "eager"), ("tensorflow", "function"))
POINTS = [(batch, length) for batch in (1, 2) for length in (8, 64, 128)]
PROCESSES = 3
POINT = "bert-base-cased/pytorch/eager/1x128"
DUEL = [os.path.join(os.path.dirname(sys.executable), "duel")]  # the installed command


def run_rows(index, samples, rng):
    """One synthetic run's rows: every contract column, figures near a fixed level per point."""
    rows = []
    started = "2024-01-01T00:00:00+00:00"
    for model_index, model in enumerate(MODELS):
        for framework, mode in CELLS:
            for batch, length in POINTS:
                level = (1 + model_index) * batch * length / 16.0 * (
                    1.3 if framework == "tensorflow" else 1.0)
                for replicate in range(1, PROCESSES + 1):
                    values = level * rng.lognormal(0.0, 0.03, samples)
                    row = contract.empty_row()
                    row.update(era="current", device="cpu", framework=framework, mode=mode,
                               precision="fp32", task="inference", model=model,
                               replicate=replicate, batch_size=batch, seq_len=length,
                               method="duel", status="ok", attempt=1, counted=True,
                               samples=values.tolist(),
                               n_samples=samples, median=float(np.median(values)),
                               mean=float(values.mean()), started_at=started,
                               cpu_model="Synthetic CPU", threads=2, hostname="scale")
                    row["shard_sha256"] = "%064x" % (index * 1000 + len(rows))
                    rows.append(row)
    return rows


def add_run(store, index, samples, rng):
    """Synthetic run number ``index`` added through the store's own add."""
    run_id = "20240101T%06dZ-%d" % (index, index)
    table = pa.Table.from_pylist(run_rows(index, samples, rng))

    def describe(frame):
        return {"run_id": run_id, "store_version": archive.VERSION,
                "started_at": "2024-%02d-%02dT%02d:00:00+00:00" % (
                    1 + index // 280, 1 + index // 10 % 28, index % 10),
                "ended_at": None, "status": "success", "machine": "scale",
                "hostname": "scale", "cpu_model": "Synthetic CPU", "git_commit": "%040x" % index,
                "eras": "current", "devices": "cpu", "points": len(MODELS) * len(CELLS)
                * len(POINTS), "processes": PROCESSES, "headline": "synthetic"}
    archive.add(store, run_id, table, describe)


def build(store, runs, samples):
    rng = np.random.default_rng(0)
    shutil.rmtree(store, ignore_errors=True)
    started = time.time()
    for index in range(runs):
        add_run(store, index, samples, rng)
    return time.time() - started


def concurrent_writers(store, count, first, samples):
    """``count`` processes, started together, each adding run ``first + i``: their times."""
    command = [sys.executable, os.path.abspath(__file__), "--output", "-", "--store", store,
               "--samples", str(samples), "--add-one"]
    started = time.time()
    writers = [subprocess.Popen(command + [str(first + i)], stdout=subprocess.PIPE, text=True)
               for i in range(count)]
    seconds = []
    for writer in writers:
        out, _ = writer.communicate()
        if writer.returncode != 0:
            raise SystemExit("a writer failed")
        seconds.append(float(out))
    return {"writers": count, "total_s": time.time() - started, "each_s": sorted(seconds),
            "landed": len([run for run in archive.run_ids(store)
                           if int(run.rsplit("-", 1)[1]) >= first])}


def timed(command, repeat):
    seconds = []
    for _ in range(repeat):
        started = time.time()
        answer = subprocess.run(command, capture_output=True, text=True)
        seconds.append(time.time() - started)
        if answer.returncode != 0:
            raise SystemExit("%s failed: %s" % (" ".join(command), answer.stderr[-2000:]))
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store", default="/tmp/duel-store-scale")
    parser.add_argument("--output", required=True, help="folder for store-scale.json")
    parser.add_argument("--reuse", action="store_true",
                        help="time the store --store already holds (made by an earlier call)")
    parser.add_argument("--writers", default="",
                        help="comma-separated counts of processes adding a run each at once")
    parser.add_argument("--add-one", type=int, metavar="INDEX",
                        help="(a writer of --writers) add run INDEX, print its seconds")
    args = parser.parse_args()
    if args.add_one is not None:
        started = time.time()
        add_run(args.store, args.add_one, args.samples, np.random.default_rng(args.add_one))
        print(time.time() - started)
        return
    build_s = None if args.reuse else build(args.store, args.runs, args.samples)
    args.runs = len(archive.run_ids(args.store))
    size = sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(args.store) for name in names)
    history = timed(DUEL + ["history", POINT, "--store", args.store], args.repeat)
    in_process = []
    for _ in range(args.repeat):
        started = time.time()
        questions.history(args.store, [questions.parse_point(POINT)])
        in_process.append(time.time() - started)
    site = os.path.join(args.store + "-site")
    publish = timed(DUEL + ["publish", site, "--store", args.store], args.repeat)
    concurrent, first = [], 10 ** 6
    for count in [int(value) for value in args.writers.split(",") if value]:
        concurrent.append(concurrent_writers(args.store, count, first, args.samples))
        first += count
    record = {"runs": args.runs, "rows_per_run": len(MODELS) * len(CELLS) * len(POINTS)
              * PROCESSES, "samples_per_row": args.samples, "store_bytes": size,
              "build_s": build_s, "history_s": history,
              "history_query_s": in_process, "publish_s": publish,
              "concurrent": concurrent,
              "cpu_model": environment.cpu_model(), "logical_cpus": os.cpu_count(),
              "python": platform.python_version(), "when": environment.utc_now()}
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "store-scale.json"), "w") as handle:
        json.dump(record, handle, indent=2)
    print("%d runs, %.0f MB; duel history %s s (its query %s s); duel publish %s s" % (
        args.runs, size / 1e6, ", ".join("%.2f" % value for value in history),
        ", ".join("%.2f" % value for value in in_process),
        ", ".join("%.1f" % value for value in publish)))
    for entry in concurrent:
        print("%(writers)d writers at once: all done in %(total_s).1f s, %(landed)d landed" % entry
              + "; each %.2f-%.2f s" % (entry["each_s"][0], entry["each_s"][-1]))


if __name__ == "__main__":
    main()
