"""Results folders as the workflow leaves them (shards and a run manifest), made of small real
shards, for the tests of the results store; and a process holding a store's writer lock."""
import json
import os
import subprocess
import sys

from conftest import SCRIPTS, cell_rows
from duel.cell import conditions, shard
from duel.host.store import archive

CELLS = (("pytorch", "eager"), ("tensorflow", "eager"))
STEAL = 0.09  # a noisy host's steal: 9% of the CPU time, beyond the judge's 5%


def judged(rows, disturbed):
    """``rows`` as the cell's judge marks them, each point taking 1 s on its threads: every one
    disturbed by the host's steal (STEAL) where ``disturbed``, else none; None: left unjudged,
    as rows written before points were judged."""
    if disturbed is None:
        return rows
    for row in rows:
        steal = STEAL if disturbed else 0.0
        row.update(point_wall_s=1.0, steal_ms=steal * 1000.0 * row["threads"], other_cpu_ms=0.0,
                   disturbance_rule=conditions.RULE, counted=True,
                   disturbed="host steal %.0f%% of its CPU time" % (100 * steal)
                   if disturbed else None)
    return rows


def results_folder(root, run_id, started_at, scale=1.0, machine="test-machine",
                   model="gpt2", processes=2, disturbed=None):
    """``root``/results with a run's shards (two cells, ``processes`` replicates each, figures
    times ``scale``, its points judged as ``judged`` says) and its manifest (run id ``run_id``,
    successful); returns the folder."""
    results = os.path.join(str(root), "results")
    written = []
    for framework, mode in CELLS:
        for replicate in range(1, processes + 1):
            rows = cell_rows(framework, mode, model, "duel",
                             scale * (1.0 if framework == "pytorch" else 1.5)
                             * (1.0 + 0.01 * replicate))
            for row in judged(rows, disturbed):
                row.update(replicate=replicate, started_at=started_at, hostname="test-host",
                           git_commit="c0ffee" + run_id[-4:].replace("-", "0"))
            relative = os.path.join("results", "shards", "current", "cpu", framework, mode,
                                    "fp32", "inference", model, "r%d.parquet" % replicate)
            path = os.path.join(str(root), relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shard.write_shard(rows, path)
            os.utime(path)
            written.append(relative)
    folder = os.path.join(results, "runs", run_id)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "manifest.json"), "w") as handle:
        json.dump({"manifest_version": 1, "status": "success", "started_at": started_at,
                   "ended_at": started_at, "git_commit": "c0ffee", "git_dirty": False,
                   "machine": {"name": machine, "hostname": "test-host",
                               "cpu_model": "Test CPU", "gpus": []},
                   "planned_shards": written, "shards": written}, handle)
    return results


def hold_lock(store):
    """Another process holding the store's writer lock, as a writer does; it says who it is."""
    script = ("import fcntl, sys, time\n"
              "from duel.host.store import archive\n"
              "handle = open(sys.argv[1], 'a+')\n"
              "archive._lock(handle, sys.argv[2], 5)\n"
              "print('held', flush=True)\n"
              "time.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", script, os.path.join(store, archive.LOCK),
                               store], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=SCRIPTS))
    assert holder.stdout.readline().strip() == "held"
    return holder


def paused_add(folder, store, seconds, *options):
    """``duel store add`` in another process, held ``seconds`` just before the one rename that
    makes its written files a run (for a run already stored: between taking the old folder away
    and putting the grown one in its place), once it has said so on stderr: a test observes the
    store there, and may kill the add at its most delicate moment. The real add runs; only the
    process's os.rename waits first."""
    script = ("import os, sys, time\n"
              "from duel.host.cli import main\n"
              "from duel.host.store import archive\n"
              "rename = os.rename\n"
              "def held(source, target):\n"
              "    if os.path.basename(source).startswith(archive.INCOMING):\n"
              "        sys.stderr.write('paused before %s\\n' % os.path.basename(target))\n"
              "        sys.stderr.flush()\n"
              "        time.sleep(float(sys.argv[1]))\n"
              "    rename(source, target)\n"
              "os.rename = held\n"
              "sys.exit(main.main(sys.argv[2:]))\n")
    return subprocess.Popen([sys.executable, "-c", script, str(seconds), "store", "add",
                             str(folder), "--store", str(store)] + list(options),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=SCRIPTS))
