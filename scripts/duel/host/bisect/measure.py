"""A release measured: one workflow run of the point in the release's era, into the store.

The run is Duel's own (``snakemake`` over Snakefile with a config of that one point, the
framework and mode alone), so its method, processes and settling are those of any run, and it is
added to the results store as every run is. A release already measured on this machine (the
store holds a run of its era and lock with the point) is not run again: an interrupted bisection
resumes from the store.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import yaml

from duel.cell import contract
from duel.host.bisect import search
from duel.host.plan import layout
from duel.host.provenance import runs
from duel.host.stacks import eras
from duel.host.store import archive


def config(point, era, store):
    """The run's config: the point alone, in ``era``, its runs added to ``store``; every other
    key (method, replicates, settling) as the workflow's config file has it."""
    return {
        "eras": [era], "devices": ["cpu"], "frameworks": [point.framework],
        "modes": {point.framework: [point.mode]}, "models": [point.model],
        "batch_sizes": [point.batch_size], "sequence_lengths": [point.seq_len],
        "tasks": ["inference"], "precisions": ["fp32"], "store": os.path.abspath(store)}


def stored(store, point, era, lock, machine, since=""):
    """The newest stored run of ``point`` in ``era`` built from ``lock`` on ``machine`` (started
    at ``since`` or later, an ISO time): (its run id, its rows of the point), or None."""
    if not os.path.isdir(store):
        return None
    sql = ("SELECT p.run_id, r.started_at, p.replicate, p.status, p.method, p.median, p.mean, "
           "p.framework_build, p.cpu_model FROM points p JOIN runs r USING (run_id) "
           "WHERE p.era = ? AND p.lock_sha256 = ? AND r.machine = ? AND p.model = ? "
           "AND p.framework = ? AND p.mode = ? AND p.batch_size = ? AND p.seq_len = ? "
           "AND r.started_at >= ? AND p.counted ORDER BY r.started_at, p.run_id")
    rows = archive.query(store, sql, [era, eras.lock_sha256(lock), machine, point.model,
                                      point.framework, point.mode, point.batch_size,
                                      point.seq_len, since], views=("runs", "points"))
    if rows.empty:
        return None
    newest = rows[rows["run_id"] == rows["run_id"].iloc[-1]]
    return newest["run_id"].iloc[0], newest


def figures(rows):
    """Per-process figures of a run's rows of one point (the method's statistic); Skip with the
    points' statuses and messages where fewer than two processes measured it."""
    ok = rows[rows["status"] == "ok"]
    by_mean = ok["method"].map(contract.reported_statistic) == "mean"
    values = np.where(by_mean, ok["mean"], ok["median"]).astype(float)
    per_process = dict(zip(ok["replicate"], values))
    if len(per_process) < 2:
        raise search.Skip("its run measured the point in %d process%s (statuses: %s)" % (
            len(per_process), "" if len(per_process) == 1 else "es",
            ", ".join(sorted(set(rows["status"].astype(str))))))
    return [per_process[key] for key in sorted(per_process)]


def builds(rows):
    """The framework's build as the release's rows report it (builds.py), a dict."""
    for text in rows["framework_build"].dropna():
        try:
            return json.loads(text)
        except ValueError:
            continue
    return {}


def run(checkout, folder, settings, more_eras):
    """One workflow run in ``folder`` with ``settings``; its exit status. Its output goes to
    ``folder``/snakemake.log. The outputs of a run killed before are made again, not trusted
    (--rerun-incomplete): an interrupted bisection resumes here."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "config.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(settings, handle, default_flow_style=None, sort_keys=False)
    environment = dict(os.environ, **{eras.MORE_ERAS_ENV: more_eras})
    with open(os.path.join(folder, "snakemake.log"), "w") as handle:
        answer = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", os.path.join(checkout, "Snakefile"),
             "--directory", os.path.abspath(folder), "--cores", "all", "--configfile", path,
             "--rerun-incomplete"],
            stdout=handle, stderr=subprocess.STDOUT, env=environment)
    # The reference weights (most of a run folder's bytes, remade by any run that needs them)
    # go; the shards, logs and manifest stay, and the store holds the shards besides.
    shutil.rmtree(os.path.join(folder, layout.at(layout.REFERENCES)), ignore_errors=True)
    return answer.returncode


def last_lines(folder, count=3):
    try:
        with open(os.path.join(folder, "snakemake.log")) as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-count:])


def machine():
    return runs.machine_name({})
