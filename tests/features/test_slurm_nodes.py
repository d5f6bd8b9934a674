"""Duel beyond one machine, on the two-node SLURM cluster (tests/slurm_cluster.py): nodes ``duel1``
and ``duel2``, each its own hostname, address and CPU, sharing this machine's file system.

One module-wide scenario (every step is real Snakemake runs, so it runs once), every run into
one store on the shared folder:
1. a run across both nodes through the SLURM profile: its cells land on both;
2. a node lost mid-cell (its slurmd and the cell's processes killed, SLURM told it is down): the
   run ends naming the node and the cell, the finished shard stays, and the same command again
   finishes the grid on the node that is left (then the node comes back);
3. two heads, one on each node's namespaces (two hostnames), started at the same moment into
   the one store, one of them with a shard whose time is set minutes before its run began.
"""
import glob
import json
import os
import re
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

import conftest
from conftest import DUEL, QUICK, REPO, SLURM_PYTHON, TEST_MODELS, write_config
from duel.cell import environment, files
from duel.host.store import archive, ingest
from slurm_cluster import LINK, MARKER, NODES, clear_leftovers, links, net_namespace
from test_slurm import PROFILE, SLURM_TEST_FLAGS, run_snakemake, when_running

pytestmark = pytest.mark.slurm

TINY = "tiny-bert-16pos"
CELLS = [("pytorch", "eager"), ("tensorflow", "eager")]
GRID = dict(frameworks=["pytorch", "tensorflow"], modes={"pytorch": ["eager"],
            "tensorflow": ["eager"]}, batch_sizes=[1], sequence_lengths=[8, 16], method="duel",
            models=[TINY], cell_threads=1, **QUICK)
# Cells that run long enough to be caught mid-sweep: each point times for a second.
SLOW = dict(GRID, duel=dict(QUICK["duel"], min_time_s=1.0, max_samples=100000),
            sequence_lengths=[8, 12, 16])
CLOCK_SKEW_S = 600  # a shard's time set this long before its run started


def rows_of(workdir, framework, mode):
    return pq.read_table(conftest.shard_file(workdir, framework, mode, TINY)).to_pylist()


def said_where(workdir, node, timeout=180):
    """Wait until a cell's log begins with its node (run_cell's first line); True once it does."""
    deadline = time.time() + timeout
    pattern = os.path.join(str(workdir), "results", "logs", "cells", "**", "*.log")
    while time.time() < deadline:
        for path in glob.glob(pattern, recursive=True):
            with open(path) as handle:
                if handle.readline().startswith(environment.RUNS_ON + "node %s " % node):
                    return True
        time.sleep(0.2)
    return False


def lose_when_running(cluster, workdir, node, lost):
    """A watcher: once a cell runs on ``node`` and has said where, lose the node mid-sweep."""
    def lose(job_id, comment):
        if said_where(workdir, node):
            time.sleep(1.0)  # into its first points
            lost.append((job_id, comment, cluster.lose(node)))
    return when_running(
        cluster, lambda comment, nodes: "run_cell" in comment and nodes == node, lose,
        after_s=0.0)


def skew_first_shard(workdir, skewed):
    """A watcher: once the shard is merged, set its time CLOCK_SKEW_S before its run began (a
    node whose clock is behind the file server's), before the run stores it. (Earlier, Snakemake
    itself touches a job's output older than the job's start.)"""
    shard = conftest.shard_file(workdir, "pytorch", "eager", TINY)
    merged = os.path.join(str(workdir), "results", "summary.parquet")

    def watch(process):
        while process.poll() is None:
            if os.path.exists(merged):
                runs = os.path.join(str(workdir), "results", "runs")
                (run_id,) = os.listdir(runs)
                with open(os.path.join(runs, run_id, "manifest.json")) as handle:
                    started = json.load(handle)["started_at"]
                began = time.mktime(time.strptime(started[:19], "%Y-%m-%dT%H:%M:%S")) \
                    - time.timezone
                os.utime(shard, (began - CLOCK_SKEW_S, began - CLOCK_SKEW_S))
                skewed.append((run_id, shard, os.stat(shard).st_mtime))
                return
            time.sleep(0.05)
    return watch


def head(cluster, name, workdir, config, store, results, while_running=None):
    """A local run started from node ``name``'s namespaces (its hostname), bound to its CPU."""
    node = cluster.node(name)
    command = node.enter() + [sys.executable, "-m", "snakemake", "-s",
                              os.path.join(REPO, "Snakefile"), "--directory", str(workdir),
                              "--cores", "1", "--configfile", config]
    log_path = os.path.join(str(workdir), "head.log")
    started = time.time()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=str(workdir), stdout=log,
                                   stderr=subprocess.STDOUT, preexec_fn=node.bind,
                                   env=dict(os.environ, DUEL_STORE=store))
        watcher = None
        if while_running:
            watcher = threading.Thread(target=while_running, args=(process,), daemon=True)
            watcher.start()
        code = process.wait(timeout=600)
        if watcher:
            watcher.join(timeout=30)
    with open(log_path) as handle:
        results[name] = {"code": code, "log": handle.read(), "s": time.time() - started}


@pytest.fixture(scope="module")
def scenario(slurm_cluster, tmp_path_factory):
    cluster = slurm_cluster
    models = tmp_path_factory.mktemp("models")
    with open(os.path.join(TEST_MODELS, TINY + ".json")) as source:
        (models / (TINY + ".json")).write_text(source.read())
    store = str(tmp_path_factory.mktemp("shared") / "store")
    profile = ["--profile", PROFILE] + SLURM_TEST_FLAGS
    env = dict(cluster.env, DUEL_STORE=store)
    found, timings = {"store": store}, {}

    # 1. Across both nodes.
    across = tmp_path_factory.mktemp("across")
    config = write_config(across, models_dir=str(models), **GRID)
    started = time.time()
    code, log = run_snakemake(SLURM_PYTHON, across, profile + ["--configfile", config], env)
    timings["run across both nodes"] = time.time() - started
    assert code == 0, log[-6000:]
    found["across"] = {"workdir": across, "log": log}

    # 2. A node lost mid-cell, and the same command again.
    lost_dir = tmp_path_factory.mktemp("lost")
    config = write_config(lost_dir, models_dir=str(models), **SLOW)
    lost = []
    started = time.time()
    code, log = run_snakemake(SLURM_PYTHON, lost_dir, profile + ["--configfile", config], env,
                              while_running=lose_when_running(cluster, lost_dir, NODES[1], lost))
    timings["run losing a node"] = time.time() - started
    shards = {cell: conftest.shard_file(lost_dir, framework, mode, TINY)
              for cell in CELLS for framework, mode in [cell]}
    kept = {cell: os.stat(path).st_mtime_ns for cell, path in shards.items()
            if os.path.exists(path)}
    states = cluster.node_states()
    started = time.time()
    again_code, again_log = run_snakemake(SLURM_PYTHON, lost_dir,
                                          profile + ["--configfile", config], env)
    timings["the same command again"] = time.time() - started
    found["lost"] = {"workdir": lost_dir, "code": code, "log": log, "lost": lost, "kept": kept,
                     "states": states, "again_code": again_code, "again_log": again_log,
                     "shards": shards}
    cluster.bring_back(NODES[1])  # for what follows

    # 3. Two heads at the same moment, one store.
    heads, skewed = {}, []
    threads = []
    for name in NODES:
        workdir = tmp_path_factory.mktemp("head-" + name)
        config = write_config(workdir, models_dir=str(models), **dict(
            GRID, frameworks=["pytorch"], modes={"pytorch": ["eager"]}, sequence_lengths=[8]))
        watcher = skew_first_shard(workdir, skewed) if name == NODES[0] else None
        threads.append(threading.Thread(target=head, args=(cluster, name, workdir, config, store,
                                                           heads, watcher)))
        heads.setdefault("workdirs", {})[name] = workdir
    started = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=700)
    timings["two heads at once"] = time.time() - started
    found["heads"], found["skewed"] = heads, skewed
    sys.stderr.write("\ntimings: %s\n" % ", ".join("%s %.1f s" % item for item in timings.items()))
    return found


def test_a_run_lands_its_cells_on_both_nodes_and_ends_as_on_one_machine(scenario):
    workdir, log = scenario["across"]["workdir"], scenario["across"]["log"]
    nodes = {}
    for framework, mode in CELLS:
        rows = rows_of(workdir, framework, mode)
        (node,) = {row["slurm_node"] for row in rows}
        (hostname,) = {row["hostname"] for row in rows}
        assert hostname == node  # each node its own host
        nodes[framework] = node
    assert sorted(nodes.values()) == sorted(NODES), nodes
    summary = pq.read_table(os.path.join(str(workdir), "results", "summary.parquet")).to_pylist()
    assert {row["slurm_node"] for row in summary} == set(NODES)
    assert "Verdict (PyTorch time / TensorFlow time" in log, log[-3000:]
    assert re.search(r"store: run \S+ added to %s \(2 shards\)" % re.escape(scenario["store"]),
                     log), log[-3000:]
    sys.stderr.write("\nrows' nodes: %s\n" % nodes)


def test_a_lost_node_is_named_with_its_cell_and_the_grid_finishes_on_the_node_left(scenario):
    found = scenario["lost"]
    log = found["log"]
    assert len(found["lost"]) == 1, log[-4000:]
    job_id, comment, killed = found["lost"][0]
    assert killed and found["states"][NODES[1]].startswith("down"), found["states"]
    assert found["code"] != 0
    line = [text for text in log.splitlines() if "did not finish" in text]
    assert len(line) == 1, log[-4000:]
    assert "it ran on node %s (SLURM job %s); its log: results/logs/cells/" % (NODES[1], job_id) \
        in line[0]
    (lost_cell,) = [cell for cell in CELLS if "%s/%s" % cell in line[0]]
    (kept_cell,) = [cell for cell in CELLS if cell != lost_cell]
    assert list(found["kept"]) == [kept_cell], found["kept"]
    # The same command again: the lost cell on the node left, the finished shard untouched.
    assert found["again_code"] == 0, found["again_log"][-4000:]
    assert os.stat(found["shards"][kept_cell]).st_mtime_ns == found["kept"][kept_cell]
    rows = rows_of(found["workdir"], *lost_cell)
    assert {row["slurm_node"] for row in rows} == {NODES[0]}
    submitted = [text for text in found["again_log"].splitlines()
                 if "has been submitted with SLURM jobid" in text]
    assert len(submitted) == 1 and "%s_%s" % lost_cell in submitted[0], found["again_log"]
    sys.stderr.write("\nlost: %s (job %s, %d processes killed): %s\n"
                     % (NODES[1], job_id, len(killed), line[0]))


def stored(store, sql, parameters=None):
    return archive.query(store, sql, parameters).to_dict("records")


def test_two_heads_at_once_into_one_store_each_keep_their_own_run(scenario):
    heads, store = scenario["heads"], scenario["store"]
    for name in NODES:
        assert heads[name]["code"] == 0, heads[name]["log"][-4000:]
    run_ids = {}
    for name in NODES:
        runs = os.path.join(str(heads["workdirs"][name]), "results", "runs")
        (run_id,) = os.listdir(runs)
        assert "-%s-" % name in run_id
        run_ids[name] = run_id
    assert len(set(run_ids.values())) == 2
    # Every shard is stored once, under the run that wrote it.
    per_shard = stored(store, "SELECT shard_sha256, count(DISTINCT run_id) AS runs "
                              "FROM points GROUP BY shard_sha256")
    assert per_shard and all(row["runs"] == 1 for row in per_shard), per_shard
    for name in NODES:
        rows = stored(store, "SELECT DISTINCT run_id, hostname FROM points WHERE run_id = ?",
                      [run_ids[name]])
        assert rows == [{"run_id": run_ids[name], "hostname": name}], rows
    listing = subprocess.run(DUEL + ["runs", "--store", store, "--csv"], capture_output=True,
                             text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    for name in NODES:
        (line,) = [text for text in listing.stdout.splitlines() if run_ids[name] in text]
        assert ",%s," % name in line, listing.stdout


def test_a_shard_whose_clock_is_behind_stays_with_the_run_whose_manifest_lists_it(scenario):
    (run_id, shard, mtime), = scenario["skewed"]
    assert abs(os.stat(shard).st_mtime - mtime) < 1  # still behind its run when it was stored
    results = os.path.join(str(scenario["heads"]["workdirs"][NODES[0]]), "results")
    rows = stored(scenario["store"], "SELECT DISTINCT run_id FROM points WHERE shard = ? AND "
                  "shard_sha256 = ?", [os.path.relpath(shard, results), files.file_sha256(shard)])
    assert rows == [{"run_id": run_id}], rows
    assert not stored(scenario["store"], "SELECT run_id FROM runs WHERE run_id LIKE ?",
                      [ingest.UNRECORDED + "%"])


def test_what_a_crashed_cluster_left_is_removed_at_the_next_start(slurm_cluster):
    """A holder of a crashed cluster's namespaces, a job process still in them and a link of
    its are gone after clear_leftovers (what Cluster.start calls first); the running cluster
    stays up."""
    ghost = subprocess.Popen(["unshare", "--net", "--uts", "--", sys.executable, "-c",
                              "import time; time.sleep(600)"],
                             env=dict(os.environ, **{MARKER: "/a/crashed/cluster"}))
    deadline = time.time() + 10
    while net_namespace(ghost.pid) == net_namespace(os.getpid()):
        assert time.time() < deadline
        time.sleep(0.05)
    job = subprocess.Popen(["nsenter", "--target", str(ghost.pid), "--net", "--", "sleep", "600"])
    ghost_link = LINK % "ghost"
    subprocess.run(["ip", "link", "add", ghost_link, "type", "veth", "peer", "name",
                    ghost_link + "n"], check=True)
    try:
        clear_leftovers(keep=slurm_cluster)
        assert ghost.wait(timeout=10) == -9 and job.wait(timeout=10) == -9
        assert ghost_link not in links() and ghost_link + "n" not in links()
        assert slurm_cluster.node_states() == dict((name, "idle") for name in NODES)
    finally:
        for process in (ghost, job):
            process.kill()
        subprocess.run(["ip", "link", "delete", ghost_link], capture_output=True)
