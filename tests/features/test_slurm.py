"""The workflow on the real SLURM cluster (tests/slurm_cluster.py), through config/profiles/slurm.

One module-wide scenario (SLURM daemons and model runs are slow, so it runs once):
1. a grid of the tiny BERT (PyTorch eager, TensorFlow eager) and a model whose build fails: the
   failing model's reference job exits non-zero, and the TensorFlow cell is cancelled on the
   cluster while it runs (as an administrator or a preemption would); both are failures that
   SLURM records and Snakemake reports, while the PyTorch cell's shard is kept;
2. the same command again, without the broken model, resumes the grid: only the cancelled cell
   is submitted again, and the summary is merged;
3. the same grid run locally (meanwhile), for the shape of its summary.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

import conftest
from conftest import QUICK, REPO, TEST_MODELS, write_config
from conftest import SLURM_PYTHON
from slurm_cluster import NODES, PARTITION, ClusterError

pytestmark = pytest.mark.slurm

PROFILE = os.path.join(REPO, "config", "profiles", "slurm")
TINY, BROKEN = "tiny-bert-16pos", "tiny-bert-bad-heads"
CELLS = [("pytorch", "eager"), ("tensorflow", "eager")]
GRID = dict(frameworks=["pytorch", "tensorflow"], modes={"pytorch": ["eager"],
            "tensorflow": ["eager"]}, batch_sizes=[1], sequence_lengths=[8, 32], method="duel",
            **QUICK)
# Test-only settings of the executor: this cluster has no accounting database (so no sacct and
# no accounts; squeue answers for finished jobs), and first status checks come early.
SLURM_TEST_FLAGS = ["--slurm-status-command", "squeue", "--slurm-no-account",
                    "--slurm-init-seconds-before-status-checks", "2",
                    "--default-resources", "slurm_partition=" + PARTITION]


def shard_file(workdir, framework, mode, model=TINY):
    return conftest.shard_file(workdir, framework, mode, model)


def run_snakemake(python, workdir, args, env, timeout=400, while_running=None):
    """Snakemake in its own process group, killed with SIGKILL past ``timeout`` (it ignores
    SIGTERM while jobs run); ``while_running(process)`` runs in a thread meanwhile."""
    command = [python, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
               "--directory", str(workdir)] + args
    log_path = os.path.join(str(workdir), "snakemake-%d.log" % time.time_ns())
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=str(workdir), env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        watcher = None
        if while_running:
            watcher = threading.Thread(target=while_running, args=(process,), daemon=True)
            watcher.start()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            raise AssertionError("snakemake ran past %d s:\n%s" % (timeout, tail(log_path)))
        finally:
            if watcher:
                watcher.join(timeout=30)
    with open(log_path) as handle:
        return process.returncode, handle.read()


def tail(path, size=6000):
    with open(path) as handle:
        return handle.read()[-size:]


def when_running(cluster, matches, act, after_s=2.0):
    """A watcher: once a job whose (comment, nodes) ``matches`` runs, wait ``after_s`` (the cell
    gets going: it is stopped mid-run) and call ``act(job_id, comment)``."""
    def watch(process):
        deadline = time.time() + 300
        while process.poll() is None and time.time() < deadline:
            try:
                jobs = cluster.squeue()
            except (ClusterError, subprocess.TimeoutExpired):  # a busy controller: ask again
                jobs = []
            for job_id, state, comment, nodes in jobs:
                if state == "RUNNING" and matches(comment, nodes):
                    time.sleep(after_s)
                    act(job_id, comment)
                    return
            time.sleep(0.5)
    return watch


def cancel_when_running(cluster, marker, cancelled):
    """A watcher: scancel the job whose comment holds ``marker`` once it runs."""
    def cancel(job_id, comment):
        subprocess.run(["scancel", job_id], env=cluster.env, timeout=30)
        cancelled.append(job_id)
    return when_running(cluster, lambda comment, nodes: marker in comment, cancel)


@pytest.fixture(scope="module")
def runs(slurm_cluster, tmp_path_factory):
    cluster = slurm_cluster
    """The three runs of the module docstring, with their outputs and timings."""
    models = tmp_path_factory.mktemp("models")
    for name in (TINY, BROKEN):
        with open(os.path.join(TEST_MODELS, name + ".json")) as source:
            (models / (name + ".json")).write_text(source.read())
    workdir = tmp_path_factory.mktemp("slurm-run")
    profile = ["--profile", PROFILE] + SLURM_TEST_FLAGS
    timings = {}

    # The local run of the same grid goes on meanwhile: the SLURM runs mostly wait.
    local = tmp_path_factory.mktemp("local-run")
    config = write_config(local, models_dir=str(models), models=[TINY], **GRID)
    local_result = []

    def run_locally():
        started = time.time()
        try:
            local_result.append(run_snakemake(
                sys.executable, local, ["--cores", "all", "--configfile", config],
                dict(os.environ)))
        except AssertionError as error:  # past its time limit, killed
            local_result.append((None, str(error)))
        timings["local run"] = time.time() - started

    local_run = threading.Thread(target=run_locally, daemon=True)
    local_run.start()

    started = time.time()
    first = write_config(workdir, models_dir=str(models), models=[TINY, BROKEN], cell_threads=1,
                         **GRID)
    cancelled = []
    marker = "tensorflow_eager_fp32_inference_" + TINY
    code, failed_log = run_snakemake(SLURM_PYTHON, workdir, profile + ["--configfile", first],
                                     cluster.env, while_running=cancel_when_running(
                                         cluster, marker, cancelled))
    timings["failing run"] = time.time() - started
    kept_mtime = os.stat(shard_file(workdir, "pytorch", "eager")).st_mtime_ns \
        if os.path.exists(shard_file(workdir, "pytorch", "eager")) else None
    after_failure = {"code": code, "log": failed_log, "cancelled": list(cancelled),
                     "jobs": cluster.completed_jobs(), "kept_mtime": kept_mtime,
                     "tensorflow_shard": os.path.exists(shard_file(workdir, "tensorflow", "eager")),
                     "summary": os.path.exists(os.path.join(str(workdir), "results",
                                                            "summary.parquet"))}

    started = time.time()
    resume = write_config(workdir, models_dir=str(models), models=[TINY], cell_threads=1, **GRID)
    code, resumed_log = run_snakemake(SLURM_PYTHON, workdir, profile + ["--configfile", resume],
                                      cluster.env)
    assert code == 0, resumed_log[-6000:]
    timings["resumed run"] = time.time() - started

    local_run.join(timeout=600)
    code, local_log = local_result[0] if local_result else (None, "the local run never ended")
    assert code == 0, local_log[-6000:]
    sys.stderr.write("timings: %s\n" % ", ".join("%s %.1f s" % item for item in timings.items()))
    return {"workdir": workdir, "local": local, "after_failure": after_failure,
            "resumed_log": resumed_log, "cluster": cluster}


def summary_rows(workdir):
    return pq.read_table(os.path.join(str(workdir), "results", "summary.parquet")).to_pylist()


def test_a_failing_job_and_a_cancelled_cell_are_failures_for_slurm_and_snakemake(runs):
    failure = runs["after_failure"]
    log = " ".join(failure["log"].split())
    assert failure["code"] != 0, log[-3000:]
    assert len(failure["cancelled"]) == 1, log[-3000:]
    cancelled = failure["cancelled"][0]
    assert failure["jobs"][cancelled]["JobState"] == "CANCELLED"
    assert "Error in rule run_cell" in log
    assert "SLURM-job '%s' failed, SLURM status is: 'CANCELLED'" % cancelled in log
    # The broken model's reference exits non-zero inside its job: SLURM says FAILED.
    failed = [job for job in failure["jobs"].values() if job["JobState"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["ExitCode"] != "0:0", failure["jobs"]
    assert "SLURM-job '%s' failed, SLURM status is: 'FAILED'" % failed[0]["JobId"] in log
    assert "Error in rule make_reference" in log and BROKEN in log
    # The other cell finished and its shard is kept; nothing was merged.
    assert failure["kept_mtime"] is not None
    assert not failure["tensorflow_shard"] and not failure["summary"]


def test_the_resumed_run_submits_only_the_unfinished_cell_and_keeps_finished_shards(runs):
    workdir, log = runs["workdir"], runs["resumed_log"]
    assert os.stat(shard_file(workdir, "pytorch", "eager")).st_mtime_ns \
        == runs["after_failure"]["kept_mtime"]
    submitted = [line for line in log.splitlines() if "has been submitted with SLURM jobid" in line]
    assert len(submitted) == 1 and "tensorflow_eager_fp32_inference_" + TINY in submitted[0], log


def test_every_cell_ran_as_its_own_slurm_job_that_slurm_records_completed(runs):
    workdir, cluster = runs["workdir"], runs["cluster"]
    jobs = cluster.completed_jobs()
    seen = []
    for framework, mode in CELLS:
        rows = pq.read_table(shard_file(workdir, framework, mode)).to_pylist()
        (job_id,) = {row["slurm_job_id"] for row in rows}
        seen.append(job_id)
        assert jobs[job_id]["JobState"] == "COMPLETED" and jobs[job_id]["ExitCode"] == "0:0"
        for row in rows:
            assert row["slurm_node"] in NODES and row["slurm_partition"] == PARTITION
            assert row["slurm_cluster"] == "duel"
            # whole cores asked for = the threads the cell timed with
            assert row["slurm_cpus_per_task"] == row["threads"] == 1
            assert row["slurm_cpus_on_node"] >= 1 and row["slurm_mem_mb"] > 1000
    assert len(set(seen)) == len(CELLS)
    sys.stderr.write("\nSLURM jobs: %s; cells' jobs: %s\n"
                     % (", ".join("%s %s" % (job_id, job["JobState"])
                                  for job_id, job in sorted(jobs.items(), key=lambda i: int(i[0]))),
                        ", ".join(seen)))


def test_the_summary_has_the_shape_of_a_local_run_of_the_same_grid(runs):
    on_slurm, local = summary_rows(runs["workdir"]), summary_rows(runs["local"])
    assert list(on_slurm[0]) == list(local[0])  # the same columns, in the same order
    key = lambda row: (row["framework"], row["mode"], row["model"], row["batch_size"],
                       row["seq_len"], row["method"], row["status"])
    assert sorted(map(key, on_slurm)) == sorted(map(key, local))
    assert {row["status"] for row in local} == {"ok", "error"}  # 32 tokens > 16 positions
    assert all(row["slurm_job_id"] is None for row in local)
    assert all(row["slurm_job_id"] for row in on_slurm)


NO_CONTROLLER = """\
ClusterName=duel
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={port}
AuthType=auth/none
NodeName={node} NodeAddr=127.0.0.1 CPUs=2
PartitionName={partition} Nodes={node} Default=YES
"""


def test_no_slurm_controller_is_one_line_before_any_job(slurm_cluster, tmp_path):
    """The profile pointed at a cluster whose controller does not answer: refused when the run
    starts, before any sbatch, with the controller's own word."""
    from slurm_cluster import free_port
    conf = tmp_path / "slurm.conf"
    conf.write_text(NO_CONTROLLER.format(port=free_port(), node=NODES[0], partition=PARTITION))
    config = write_config(tmp_path, models_dir=TEST_MODELS, models=[TINY], cell_threads=1, **GRID)
    env = dict(os.environ, SLURM_CONF=str(conf))
    code, log = run_snakemake(SLURM_PYTHON, tmp_path, ["--profile", PROFILE] + SLURM_TEST_FLAGS
                              + ["--configfile", config], env, timeout=180)
    assert code != 0
    assert ("the slurm executor needs a SLURM controller that answers, and `scontrol ping` says: "
            "Slurmctld(primary) at ") in log, log[-3000:]
    assert " is DOWN (SLURM_CONF=%s)" % conf in log
    assert "sbatch" not in log and not os.path.exists(str(tmp_path / "results"))
