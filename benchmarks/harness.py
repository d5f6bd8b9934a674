#!/usr/bin/env python
"""A benchmark of Duel's timing harness itself (not a test): overhead, agreement, repeatability.

    .venv/bin/python benchmarks/harness.py                 # full mode, about 6 minutes on 2 cores
    .venv/bin/python benchmarks/harness.py --quick         # seconds; the test suite runs this
    .venv/bin/python benchmarks/harness.py --output DIR   # every number as JSON too: DIR/harness.json

1. Overhead of ``timing.time_duel``: its median sample of a call that does nothing (what the
   harness adds to every sample: the clock reads, the device barrier, the bookkeeping), beside
   a bare ``perf_counter`` pair around the same call; and its median of a busy-wait that lasts
   exactly 1 ms by construction, minus that 1 ms. Target: under 1% of a 1 ms call.
2. Agreement: Duel's median, ``torch.utils.benchmark.Timer`` (``blocked_autorange``, the same
   thread count) and a bare ``perf_counter`` loop, on the same PyTorch model and input,
   measured side by side in one process: interleaved rounds whose order rotates, so drift in the
   machine's load reaches all three alike; the agreement is the median over rounds of each
   round's ratio (a paired comparison). Target: within a few percent.
3. Repeatability: the same cell (``duel.cell.commands.run_cell``, the workflow's own entry point) run
   twice, one process after the other; per point the second run's median / the first's.

Prints a Markdown table (the README holds one) with the load average seen around each part: on a
shared machine, numbers taken under load are noisier, and the table says so.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)

from duel.cell import environment, models, process, sweep, timing  # noqa: E402

FULL = {
    "overhead_samples": 20000,
    "busy_samples": 2000,
    "model": os.path.join(CHECKOUT, "config", "models", "bert-base-cased.json"),
    "points": [(1, 8), (1, 128)],
    "rounds": 9,
    "min_time_s": 1.0,
    "cell": {"model": os.path.join(CHECKOUT, "config", "models", "distilbert-base-uncased.json"),
             "cells": [("pytorch", "eager"), ("tensorflow", "function")],
             "batch_sizes": "1", "sequence_lengths": "8,128", "min_time_s": "1.0"},
}
QUICK = {
    "overhead_samples": 2000,
    "busy_samples": 50,
    "model": os.path.join(CHECKOUT, "tests", "data", "models", "tiny-bert-16pos.json"),
    "points": [(1, 8)],
    "rounds": 2,
    "min_time_s": 0.1,
    "cell": {"model": os.path.join(CHECKOUT, "tests", "data", "models", "tiny-bert-16pos.json"),
             "cells": [("pytorch", "eager")],
             "batch_sizes": "1", "sequence_lengths": "8", "min_time_s": "0.1"},
}
BUSY_MS = 1.0


def load():
    """The 1-minute load average, and the CPUs this process may use."""
    return {"load_1min": round(os.getloadavg()[0], 2), "cpus": environment.usable_cpus()}


def busy_wait(milliseconds):
    """A call that lasts ``milliseconds`` by construction (a busy loop on the same clock)."""
    seconds = milliseconds / 1000.0

    def call():
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    return call


def bare_samples_ms(call, count=None, min_time_s=None):
    """Per-call times of ``call`` with nothing but a perf_counter pair around it."""
    samples = []
    started = time.perf_counter()
    while True:
        before = time.perf_counter()
        call()
        after = time.perf_counter()
        samples.append((after - before) * 1000.0)
        if count is not None and len(samples) >= count:
            return samples
        if min_time_s is not None and after - started >= min_time_s and len(samples) >= 10:
            return samples


def duel_settings(samples=None, min_time_s=0.0):
    if samples:
        return timing.DuelSettings(warmup_calls=3, min_samples=samples, min_time_s=0.0,
                                   max_samples=samples, max_time_s=600.0)
    return timing.DuelSettings(warmup_calls=3, min_samples=10, min_time_s=min_time_s,
                               max_samples=1000000, max_time_s=600.0)


def measure_overhead(config):
    """Part 1: what the harness adds to a sample, alone and on a 1 ms call."""
    before = load()

    def noop():
        return None

    count = config["overhead_samples"]
    duel_noop = statistics.median(timing.time_duel(noop, settings=duel_settings(count)).samples_ms)
    bare_noop = statistics.median(bare_samples_ms(noop, count=count))
    busy = busy_wait(BUSY_MS)
    count = config["busy_samples"]
    duel_busy = statistics.median(timing.time_duel(busy, settings=duel_settings(count)).samples_ms)
    bare_busy = statistics.median(bare_samples_ms(busy, count=count))
    return {
        "noop_duel_us": duel_noop * 1000.0,
        "noop_bare_us": bare_noop * 1000.0,
        "busy_ms": BUSY_MS,
        "busy_duel_ms": duel_busy,
        "busy_bare_ms": bare_busy,
        "busy_duel_overhead_share": (duel_busy - BUSY_MS) / BUSY_MS,
        "busy_duel_vs_bare_share": (duel_busy - bare_busy) / BUSY_MS,
        "load_before": before,
        "load_after": load(),
    }


def measure_agreement(config, threads):
    """Part 2: Duel, torch.utils.benchmark.Timer and a bare loop on one model and input."""
    process.prepare_process("pytorch", "cpu", threads)
    from torch.utils import benchmark

    from duel.cell.adapters import load_adapter

    adapter = load_adapter("pytorch")("eager", "cpu", "fp32", threads)
    spec = models.load_model_spec(config["model"])
    adapter.build(spec, seed=0)
    results = []
    for batch, length in config["points"]:
        before = load()
        inputs = adapter.inputs(sweep.token_ids(spec, batch, length, 0))
        call = adapter.call_for("duel", inputs)
        rounds = {"duel": [], "timer": [], "bare": []}
        methods = ["duel", "timer", "bare"]
        with adapter.inference_context("duel"):
            for _ in range(3):
                call()
            # One block length for all three: at least min_time_s and 10 calls, so each takes
            # about as many samples as duel's own minimum and the blocks of a round are alike.
            call_s = min(bare_samples_ms(call, count=3)) / 1000.0
            block_s = max(config["min_time_s"], 10 * call_s)
            for index in range(config["rounds"]):
                order = methods[index % 3:] + methods[:index % 3]  # rotate who goes first
                for method in order:
                    if method == "duel":
                        measurement = timing.time_duel(
                            call, adapter.synchronise, duel_settings(min_time_s=block_s))
                        value = statistics.median(measurement.samples_ms)
                    elif method == "timer":
                        timer = benchmark.Timer(stmt="call()", globals={"call": call},
                                                num_threads=threads)
                        value = timer.blocked_autorange(min_run_time=block_s).median
                        value *= 1000.0
                    else:
                        value = statistics.median(bare_samples_ms(call, min_time_s=block_s))
                    rounds[method].append(value)
        medians = dict((method, statistics.median(values)) for method, values in rounds.items())
        results.append({
            "model": spec.name, "batch_size": batch, "seq_len": length, "threads": threads,
            "block_s": block_s, "rounds_ms": rounds, "median_ms": medians,
            # paired: each round's three figures were taken back to back, under the same load
            "duel_over_timer": statistics.median(
                duel / other for duel, other in zip(rounds["duel"], rounds["timer"])),
            "duel_over_bare": statistics.median(
                duel / other for duel, other in zip(rounds["duel"], rounds["bare"])),
            "round_spread": dict((method, max(values) / min(values) - 1.0)
                                 for method, values in rounds.items()),
            "load_before": before, "load_after": load(),
        })
    return results


def run_cell_once(cell, framework, mode, output, threads):
    command = [sys.executable, "-m", "duel.cell.commands.run_cell",
               "--framework", framework, "--mode", mode, "--model-config", cell["model"],
               "--batch-sizes", cell["batch_sizes"], "--sequence-lengths", cell["sequence_lengths"],
               "--min-time-s", cell["min_time_s"], "--threads", str(threads), "--output", output]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError("run_cell failed:\n" + result.stderr[-3000:])
    import pyarrow.parquet as pq
    return pq.read_table(output).to_pylist()


def measure_repeatability(config, threads):
    """Part 3: the same cell twice; per point the second median / the first."""
    cell = config["cell"]
    results = []
    folder = tempfile.mkdtemp(prefix="duel-harness-")
    for framework, mode in cell["cells"]:
        before = load()
        runs = [run_cell_once(cell, framework, mode,
                              os.path.join(folder, "%s-%s-%d.parquet" % (framework, mode, n)),
                              threads)
                for n in (1, 2)]
        for first, second in zip(*runs):
            if first["status"] != "ok" or second["status"] != "ok":
                raise RuntimeError("point not ok: %s / %s" % (first["message"], second["message"]))
            results.append({
                "model": first["model"], "framework": framework, "mode": mode,
                "batch_size": first["batch_size"], "seq_len": first["seq_len"],
                "median_ms": [first["median"], second["median"]],
                "n_samples": [first["n_samples"], second["n_samples"]],
                "second_over_first": second["median"] / first["median"],
                "load_before": before, "load_after": load(),
            })
    return results


def percent(share):
    return "%+.2f%%" % (100.0 * share)


def markdown(report):
    """The README's table of this run."""
    overhead = report["overhead"]
    lines = [
        "| part | what | result | target |",
        "| --- | --- | --- | --- |",
        "| 1 | duel's median sample of a no-op call (bare perf_counter pair: %.3f us) | %.3f us "
        "| |" % (overhead["noop_bare_us"], overhead["noop_duel_us"]),
        "| 1 | duel's median of a 1 ms busy-wait, minus 1 ms (bare loop: %s) | %s of 1 ms | < 1%% |"
        % (percent(overhead["busy_bare_ms"] / BUSY_MS - 1.0),
           percent(overhead["busy_duel_overhead_share"])),
    ]
    for row in report["agreement"]:
        lines.append(
            "| 2 | %s %dx%d, %d threads: duel %.2f ms, Timer %.2f ms, bare loop %.2f ms (%d rounds "
            "of %.1f s blocks; spread %s / %s / %s) | duel/Timer %s, duel/bare %s (median of "
            "per-round ratios) | within a few %% |" % (
                row["model"], row["batch_size"], row["seq_len"], row["threads"],
                row["median_ms"]["duel"], row["median_ms"]["timer"], row["median_ms"]["bare"],
                len(row["rounds_ms"]["duel"]), row["block_s"], percent(row["round_spread"]["duel"]),
                percent(row["round_spread"]["timer"]), percent(row["round_spread"]["bare"]),
                percent(row["duel_over_timer"] - 1.0), percent(row["duel_over_bare"] - 1.0)))
    for row in report["repeatability"]:
        lines.append(
            "| 3 | %s %s %s %dx%d run twice: %.2f ms, %.2f ms | second/first %s | |" % (
                row["model"], row["framework"], row["mode"], row["batch_size"], row["seq_len"],
                row["median_ms"][0], row["median_ms"][1],
                percent(row["second_over_first"] - 1.0)))
    loads = [part["load_before"]["load_1min"] for part in [overhead] + report["agreement"]
             + report["repeatability"]] + [overhead["load_after"]["load_1min"]]
    lines.append("")
    spread = max(max(row["round_spread"].values()) for row in report["agreement"])
    if max(loads) > report["threads"] + 1.0 or spread > 0.10:  # its own threads count too
        lines.append("**Disturbed**: load average up to %.2f with %d threads of its own, rounds "
                     "of one method up to %s apart: other work shared the cores; re-run on a "
                     "quiet machine." % (max(loads), report["threads"], percent(spread)))
        lines.append("")
    lines.append("Machine: %s, %d usable CPUs, %d threads; 1-minute load average during the run "
                 "%.2f-%.2f; mode %s; %s." % (
                     environment.cpu_model(), environment.usable_cpus(), report["threads"],
                     min(loads), max(loads), report["mode"], report["finished_at"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny settings: proves it runs")
    parser.add_argument("--output", help="a folder: also write every number to harness.json in it")
    parser.add_argument("--threads", type=int, default=None, help="default: all usable CPUs")
    args = parser.parse_args(argv)
    config = QUICK if args.quick else FULL
    threads = args.threads or environment.usable_cpus()
    started = time.time()
    report = {"mode": "quick" if args.quick else "full", "threads": threads}
    report["wall_s"] = {}
    for part, measure in (("overhead", lambda: measure_overhead(config)),
                          ("agreement", lambda: measure_agreement(config, threads)),
                          ("repeatability", lambda: measure_repeatability(config, threads))):
        began = time.time()
        report[part] = measure()
        report["wall_s"][part] = round(time.time() - began, 1)
    report["wall_s"]["total"] = round(time.time() - started, 1)
    report["finished_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = markdown(report)
    print(text)
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, "harness.json"), "w") as handle:
            json.dump(report, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
