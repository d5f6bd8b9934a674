#!/usr/bin/env python
"""What planning costs Snakemake as a grid grows to a large cluster's size.

Makes ``--models`` copies of the tiny test model under other names and times a dry run
(``snakemake -n``: the whole DAG built and every job planned, nothing run) of a grid of them in
PyTorch eager and TensorFlow eager, ``--replicates`` processes a cell, so the grid has
models x 2 x replicates cells. Each size is timed ``--repeat`` times, each in a fresh process,
as a user meets it. A real run pays this once when it starts (and the merge's inputs again).

    .venv/bin/python benchmarks/plan_scale.py --output DIR --cells 100,1000,10000
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
MODEL = os.path.join(CHECKOUT, "tests", "data", "models", "tiny-bert-16pos.json")
FRAMEWORK_MODES = 2  # PyTorch eager, TensorFlow eager

from duel.cell import environment  # noqa: E402


def grid(folder, cells, replicates):
    """A working folder whose config plans ``cells`` cells; returns the config's path."""
    models = cells // (FRAMEWORK_MODES * replicates)
    models_dir = os.path.join(folder, "models")
    os.makedirs(models_dir)
    names = ["tiny-%05d" % index for index in range(models)]
    with open(MODEL) as handle:
        model = json.load(handle)
    for name in names:
        with open(os.path.join(models_dir, name + ".json"), "w") as handle:
            json.dump(dict(model, name=name), handle)
    config = {"models_dir": models_dir, "models": names, "frameworks": ["pytorch", "tensorflow"],
              "modes": {"pytorch": ["eager"], "tensorflow": ["eager"]}, "batch_sizes": [1],
              "sequence_lengths": [8], "replicates": replicates, "max_replicates": replicates,
              "max_jobs": 2 * cells}
    path = os.path.join(folder, "config.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path, models * FRAMEWORK_MODES * replicates


def dry_run(folder, config):
    """Seconds a fresh `snakemake -n` takes, and the jobs it planned."""
    started = time.time()
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s",
                             os.path.join(CHECKOUT, "Snakefile"), "--directory", folder, "-n",
                             "--quiet", "rules", "--cores", "2", "--configfile", config],
                            capture_output=True, text=True, cwd=folder)
    seconds = time.time() - started
    if result.returncode != 0:
        raise SystemExit("snakemake -n failed:\n" + result.stdout[-2000:] + result.stderr[-3000:])
    jobs = 0
    for line in result.stdout.splitlines():
        if line.strip().startswith("total"):
            jobs = int(line.split()[1])
    return seconds, jobs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--cells", default="100,1000,10000")
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    os.makedirs(args.output, exist_ok=True)
    sizes = []
    for wanted in [int(value) for value in args.cells.split(",")]:
        folder = tempfile.mkdtemp(prefix="duel-plan-")
        try:
            config, cells = grid(folder, wanted, args.replicates)
            times, jobs = [], None
            for _ in range(args.repeat):
                seconds, jobs = dry_run(folder, config)
                times.append(round(seconds, 2))
            sizes.append({"cells": cells, "jobs": jobs, "seconds": times})
            print("%6d cells, %6d jobs: %s s" % (cells, jobs, ", ".join(map(str, times))),
                  flush=True)
        finally:
            shutil.rmtree(folder)
    record = {"cpu_model": environment.cpu_model(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "replicates": args.replicates,
              "sizes": sizes}
    with open(os.path.join(args.output, "plan-scale.json"), "w") as handle:
        json.dump(record, handle, indent=1)


if __name__ == "__main__":
    main()
