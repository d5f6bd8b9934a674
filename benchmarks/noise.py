#!/usr/bin/env python
"""Where the noise comes from: drift in time within a process, or differences between processes.

The same workload (one model, one input, PyTorch or TensorFlow eager, a bare timed loop) runs in
many fresh processes, in interleaved rounds of every variant of the measurement conditions, so
a slow change of the machine lands on every variant alike (asv's habit). Each process times its
calls for ``--seconds`` and reports them with their time stamps; the analysis splits the
variance of log window medians (windows of ``--window`` consecutive calls) into a part between
processes (one-way ANOVA, process as the group) and a part within processes over time:

- ``between_cv``: the spread of the process medians (coefficient of variation);
- ``within_cv``: the typical spread of one process's window medians around its own median;
- ``between_share``: the between-process share of the variance of log window medians.

Variants (what the field uses against noise; duel's cells now run as ``duel``):
- ``plain``: no binding, collector on, default inter-op pool (duel before this change);
- ``pinned``: the process bound to fixed CPUs, OpenMP threads to places (conditions.py);
- ``gc-off``: the collector off while timing (as timeit and torch.utils.benchmark);
- ``duel``: pinned + gc-off + inter-op pool = threads, as run_cell sets them;
- ``passive``: ``duel`` with ``OMP_WAIT_POLICY=PASSIVE`` (OpenMP threads sleep instead of
  spinning while they wait: on cores shared with other work, spinning threads steal each other's
  time; seen to matter a great deal under load, README "Deployed, without Python");
- ``jemalloc``: ``duel`` with jemalloc preloaded (``--jemalloc PATH``, e.g. Debian's
  libjemalloc2; skipped when the library is absent).
- ``hashseed``: ``duel`` with ``PYTHONHASHSEED=0`` (the same hashing, so the same dict and set
  orders, in every process);
- ``inter-1``, ``onednn-off`` (``--framework tensorflow``): ``duel`` with an inter-op pool of one
  thread; with ``TF_ENABLE_ONEDNN_OPTS=0``.

    .venv/bin/python benchmarks/noise.py --rounds 4 --seconds 10 --output DIR   # DIR/noise.json

Prints a table and writes the raw per-process samples and the analysis as JSON.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
VARIANTS = {"pytorch": ("plain", "pinned", "gc-off", "duel", "passive", "jemalloc", "hashseed"),
            "tensorflow": ("plain", "duel", "hashseed", "inter-1", "onednn-off", "jemalloc")}
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def worker(args):
    """One process: build the model, warm up, time calls for ``seconds``; print JSON."""
    from duel.cell import conditions

    pinned = args.variant not in ("plain", "gc-off")
    gc_off = args.variant != "plain" and args.variant != "pinned"
    if args.framework == "tensorflow":
        return tensorflow_worker(args, pinned, gc_off)
    os.environ.update({"USE_TF": "0", "USE_TORCH": "1", "HF_HUB_OFFLINE": "1"})
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    bound = conditions.bind_process(args.threads) if pinned else {}
    import torch

    from duel.cell import compat, models

    torch.set_num_threads(args.threads)
    if pinned and gc_off:  # duel and the variants made from it
        compat.set_interop_threads(torch, args.threads)
    spec = models.load_model_spec(os.path.join(CHECKOUT, "config", "models",
                                               args.model + ".json"))
    family = models.FAMILIES[spec.family]
    torch.manual_seed(0)
    model = compat.model_class(family.pytorch_class)(compat.build_config(
        family.config_class, spec.family, spec.architecture))
    model.eval()
    ids = torch.from_numpy(np.random.RandomState(0).randint(
        0, models.vocab_size(spec), size=(1, args.length)).astype(np.int64))
    with torch.no_grad():
        return timed(lambda: model(ids), args, gc_off, bound)


def timed(call, args, gc_off, bound):
    """Warm up, time ``call`` for ``seconds``, print the samples as JSON."""
    from duel.cell import conditions

    for _ in range(5):
        call()
    times, stamps = [], []
    with conditions.gc_paused({}) if gc_off else _nothing():
        started = time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            before = time.perf_counter()
            call()
            after = time.perf_counter()
            times.append((after - before) * 1000.0)
            stamps.append(time.time())
    print(json.dumps({"variant": args.variant, "samples_ms": times, "stamps": stamps,
                      "bound": bound, "pid": os.getpid()}))
    return 0


def tensorflow_worker(args, pinned, gc_off):
    """The TensorFlow eager call as run_cell makes it (intra- and inter-op pools = threads;
    ``inter-1``: an inter-op pool of one)."""
    from duel.cell import compat, conditions, models

    os.environ.update({"USE_TF": "1", "USE_TORCH": "0", "HF_HUB_OFFLINE": "1",
                       "TF_CPP_MIN_LOG_LEVEL": "2"})
    bound = conditions.bind_process(args.threads) if pinned else {}
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(
        1 if args.variant == "inter-1" else args.threads)
    spec = models.load_model_spec(os.path.join(CHECKOUT, "config", "models",
                                               args.model + ".json"))
    family = models.FAMILIES[spec.family]
    tf.random.set_seed(0)
    model = compat.model_class(family.tensorflow_class)(compat.build_config(
        family.config_class, spec.family, spec.architecture))
    ids = tf.constant(np.random.RandomState(0).randint(
        0, models.vocab_size(spec), size=(1, args.length)).astype(np.int32))
    return timed(lambda: model(ids, training=False), args, gc_off, bound)


class _nothing(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def run_process(variant, args):
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--variant", variant,
               "--seconds", str(args.seconds), "--threads", str(args.threads),
               "--model", args.model, "--length", str(args.length),
               "--framework", args.framework]
    env = dict(os.environ)
    for name in ("OMP_PROC_BIND", "OMP_PLACES", "LD_PRELOAD", "OMP_WAIT_POLICY",
                 "PYTHONHASHSEED", "TF_ENABLE_ONEDNN_OPTS"):
        env.pop(name, None)
    if variant == "passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    if variant == "hashseed":
        env["PYTHONHASHSEED"] = "0"
    if variant == "onednn-off":
        env["TF_ENABLE_ONEDNN_OPTS"] = "0"
    if variant == "jemalloc":
        env["LD_PRELOAD"] = args.jemalloc
    output = subprocess.check_output(command, env=env, text=True)
    return json.loads(output.strip().splitlines()[-1])


def window_medians(samples, window):
    samples = np.asarray(samples, dtype=float)
    count = samples.size // window
    return np.array([np.median(samples[i * window:(i + 1) * window]) for i in range(count)])


def decompose(processes, window):
    """Between- and within-process spread of one variant's processes."""
    groups = [np.log(window_medians(p["samples_ms"], window)) for p in processes]
    groups = [group for group in groups if group.size >= 2]
    medians = np.array([np.median(p["samples_ms"]) for p in processes])
    if not groups or len(medians) < 2:
        raise SystemExit("too few windows or processes: raise --seconds or --rounds")
    everything = np.concatenate(groups)
    grand = everything.mean()
    between = sum(group.size * (group.mean() - grand) ** 2 for group in groups)
    within = sum(((group - group.mean()) ** 2).sum() for group in groups)
    within_cv = float(np.mean([np.std(np.exp(group)) / np.mean(np.exp(group))
                               for group in groups]))
    return {
        "processes": len(processes),
        "median_ms": float(np.median(medians)),
        "process_medians_ms": [float(value) for value in medians],
        "between_cv": float(np.std(medians, ddof=1) / np.mean(medians)),
        "max_over_min": float(medians.max() / medians.min()),
        "within_cv": within_cv,
        "between_share": float(between / (between + within)) if between + within else None,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="duel")
    parser.add_argument("--variants", default=None, help="default: every variant of the framework")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--window", type=int, default=20, help="calls per window median")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--framework", default="pytorch", choices=("pytorch", "tensorflow"))
    parser.add_argument("--model", default="bert-base-cased")
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--jemalloc", default=JEMALLOC)
    parser.add_argument("--output", default=None, help="a folder: the JSON goes to noise.json in it")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    chosen = args.variants.split(",") if args.variants else VARIANTS[args.framework]
    variants = [variant for variant in chosen
                if variant != "jemalloc" or os.path.exists(args.jemalloc)]
    raw = dict((variant, []) for variant in variants)
    loads = [os.getloadavg()]
    for round_index in range(args.rounds):
        for variant in variants:  # interleaved: each round runs every variant once
            raw[variant].append(run_process(variant, args))
            loads.append(os.getloadavg())
        sys.stderr.write("round %d of %d done\n" % (round_index + 1, args.rounds))
    if args.output:  # the samples first: an analysis that fails loses no measurement
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, "noise-raw.json"), "w") as handle:
            json.dump({"settings": vars(args), "load_averages": loads, "raw": raw}, handle)
    analysis = dict((variant, decompose(processes, args.window))
                    for variant, processes in raw.items())
    result = {"settings": vars(args), "load_averages": loads, "analysis": analysis}
    print("%-9s %9s %11s %12s %11s %14s" % ("variant", "median", "between_cv", "max/min",
                                            "within_cv", "between_share"))
    for variant, row in analysis.items():
        print("%-9s %7.2fms %10.1f%% %12.3f %10.1f%% %13.0f%%" % (
            variant, row["median_ms"], 100 * row["between_cv"], row["max_over_min"],
            100 * row["within_cv"], 100 * (row["between_share"] or 0)))
    print("load average (1 min) from %.2f to %.2f" % (min(l[0] for l in loads),
                                                      max(l[0] for l in loads)))
    if args.output:
        result["raw"] = raw
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, "noise.json"), "w") as handle:
            json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
