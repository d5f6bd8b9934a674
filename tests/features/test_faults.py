"""Faults made for real, one test per row of the README's fault table (README, "Faults and
recovery"): a real SIGINT to the run's process group mid-cell, a second run in the same folder, a
disk that fills while a shard is written (a fixed-size tmpfs), a truncated reference, broken
model configs and an oversized plan; each time, the documented recovery keeps finished shards
byte-identical. Other rows live beside the code they test: SIGKILL (test_workflow.py), a corrupt
shard (test_readme.py), a missing Docker engine (test_docker.py), no SLURM controller
(test_slurm.py).
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import (BROKEN_MODEL_CONFIGS, QUICK, REPO, TEST_MODELS, shard_file, snakemake,
                      write_config)

pytestmark = pytest.mark.workflow

MODEL = "tiny-bert-16pos"
# The processes of the grid: TensorFlow's two modes share one (duel/cell/modes.py).
CELLS = [("pytorch", "eager"), ("tensorflow", "eager+function")]
GRID = dict(models=[MODEL], batch_sizes=[1], sequence_lengths=[8], method="duel",
            modes={"pytorch": ["eager"], "tensorflow": ["eager", "function"]}, **QUICK)


def tiny_config(workdir, models_dir, **values):
    return write_config(workdir, models_dir=str(models_dir), **dict(GRID, **values))


@pytest.fixture(scope="module")
def models_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    shutil.copy(os.path.join(TEST_MODELS, MODEL + ".json"), str(folder))
    return folder


def at_a_terminal():
    """In the child: SIGINT handled as at a terminal. A suite started in the background (nohup,
    ``&``) hands its children SIGINT ignored, and Python then installs no KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(workdir, config, *args, cores="all"):
    """The real workflow in its own process group (so a signal reaches all of it), logging to a
    file in ``workdir``, with Ctrl-C's default action: (process, log path)."""
    command = [sys.executable, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
               "--directory", str(workdir), "--cores", cores, "--configfile", config] + list(args)
    log_path = os.path.join(str(workdir), "run-%d.log" % time.time_ns())
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=str(workdir), stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=at_a_terminal)
    return process, log_path


def wait_for(condition, what, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("%s did not happen within %d s" % (what, timeout))


def steps_done(log_path, count):
    """Whether Snakemake's log says ``count`` jobs are done (a shard on disk may belong to a job
    that has not ended yet)."""
    with open(log_path) as log:
        return re.search(r"\b%d of \d+ steps \(\d+%%\) done" % count, log.read()) is not None


def said(result):
    """What a Snakemake run printed (a dry run prints its errors to stdout)."""
    return result.stdout + result.stderr


def planned_jobs(result):
    """{rule: count} of the job table Snakemake printed."""
    return dict(line.split()[:2] for line in said(result).splitlines()
                if len(line.split()) == 2 and line.split()[1].isdigit())


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def shards_of(workdir):
    return [shard_file(workdir, framework, mode, MODEL) for framework, mode in CELLS]


def finished_shards(workdir):
    """{shard path: its bytes} of the shards on disk now."""
    return {path: read(path) for path in shards_of(workdir) if os.path.exists(path)}


@pytest.fixture(scope="module")
def interrupted_run(tmp_path_factory, models_folder):
    """A run with Ctrl-C (SIGINT to its process group) while a cell runs after the first cell
    finished, and second runs started in the same folder meanwhile (as it is and with
    --rerun-incomplete); then the same command again. Returns (workdir, second runs, what
    was on disk after the interrupt, resumed run)."""
    workdir = tmp_path_factory.mktemp("interrupted")
    # One job at a time, points of two seconds: a second after the first cell's end the next
    # cell is still running (two cells side by side may end within that second).
    config = tiny_config(workdir, models_folder, duel=dict(QUICK["duel"], min_time_s=2.0))
    process, log_path = start(workdir, config, cores="1")
    try:
        wait_for(lambda: os.path.exists(os.path.join(
            str(workdir), "results", "logs", "reference")), "the reference job's start")
        # The same command while a job runs meets that job's incomplete marker or the lock;
        # with --rerun-incomplete, as Snakemake then advises, it must meet the lock.
        with ThreadPoolExecutor(2) as pool:
            second = list(pool.map(lambda extra: snakemake(
                workdir, "--cores", "1", *extra, "--configfile", config, check=False,
                timeout=120), ([], ["--rerun-incomplete"])))
        wait_for(lambda: steps_done(log_path, 2), "the first cell's end")
        time.sleep(1.0)  # the next cell is running now
        kept = finished_shards(workdir)
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    with open(log_path) as log:
        first_log = log.read()
    resumed = snakemake(workdir, "--cores", "1", "--configfile", config, check=False)
    return workdir, config, second, first_log, kept, resumed


def test_a_second_run_in_the_same_folder_is_refused_by_snakemakes_lock(interrupted_run):
    _, _, (same, rerun_incomplete), _, _, _ = interrupted_run
    assert same.returncode != 0
    assert "Directory cannot be locked" in same.stderr or \
        "Incomplete files:\nresults/reference/" in same.stderr, same.stderr[-2000:]
    assert rerun_incomplete.returncode != 0
    assert "Directory cannot be locked" in rerun_incomplete.stderr, \
        rerun_incomplete.stderr[-2000:]


def test_ctrl_c_keeps_finished_shards_and_the_same_command_resumes(interrupted_run):
    workdir, _, _, first_log, kept, resumed = interrupted_run
    assert len(kept) == 1 and len(finished_shards(workdir)) == 2
    assert "Terminating processes on user request" in first_log or "KeyboardInterrupt" in \
        first_log, first_log[-2000:]
    # No --unlock, no --rerun-incomplete: Snakemake released its lock and removed the
    # interrupted cell's partial outputs itself.
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for path, content in kept.items():
        assert read(path) == content, path
    assert os.path.exists(os.path.join(str(workdir), "results", "summary.xlsx"))
    assert "Duel: 3 points: 3 ok." in resumed.stderr


def test_a_truncated_reference_is_refused_and_the_shard_kept(interrupted_run, tmp_path):
    workdir, config, _, _, _, _ = interrupted_run
    copy = tmp_path / "copy"
    shutil.copytree(str(workdir), str(copy), symlinks=True)  # copy2: times kept
    config = os.path.join(str(copy), os.path.basename(config))
    before = finished_shards(copy)
    (weights,) = glob.glob(os.path.join(str(copy), "results", "reference", "current", MODEL,
                                        "pytorch", "model.*"))
    with open(weights, "r+b") as handle:
        handle.truncate(100)
    started = time.time()
    result = snakemake(copy, "--cores", "all", "--configfile", config, "--forcerun", "run_cell",
                       check=False)
    assert result.returncode != 0 and time.time() - started < 60
    relative = os.path.relpath(weights, str(copy))
    line = next(line for line in result.stderr.splitlines() if line.startswith("reference file"))
    assert line.startswith("reference file %s is 100 bytes, but its job wrote " % relative)
    assert "delete results/reference/current/%s and run the same command again" % MODEL in line
    assert "Traceback" not in result.stderr and "references.py" not in result.stderr
    assert finished_shards(copy) == before and len(before) == 2
    # The recovery the line gives: the same command plans the reference again for its cells
    # (making it is what every run does; planned here, not run again).
    shutil.rmtree(os.path.join(str(copy), "results", "reference", "current", MODEL))
    again = snakemake(copy, "-n", "--cores", "all", "--configfile", config, "--forcerun",
                      "run_cell", check=False)
    assert again.returncode == 0, said(again)[-3000:]
    assert planned_jobs(again)["make_reference"] == "1" and planned_jobs(again)["run_cell"] == "2"


def test_a_reference_changed_in_place_with_its_time_kept_is_found_by_its_hash(interrupted_run, tmp_path):
    workdir, config, _, _, _, _ = interrupted_run
    folder = os.path.join(str(workdir), "results", "reference", "current", MODEL)
    copy = tmp_path / "reference"
    shutil.copytree(folder, str(copy))
    from duel.host.plan import references
    references.check(str(copy / "reference.json"))  # a copy: hashed once, and it matches
    assert os.path.exists(str(copy / references.VERIFIED))
    (weights,) = glob.glob(str(copy / "tensorflow" / "*.h5"))
    written = os.stat(weights)
    with open(weights, "r+b") as handle:
        handle.seek(os.path.getsize(weights) // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(weights, ns=(written.st_atime_ns, written.st_mtime_ns))  # its time set back
    with pytest.raises(references.ReferenceMismatch, match="another SHA-256"):
        references.check(str(copy / "reference.json"))
    (copy / "reference.json").write_text("[1, 2]")  # JSON, but not an object
    with pytest.raises(references.ReferenceMismatch, match="not readable JSON"):
        references.check(str(copy / "reference.json"))


# --- a full disk: a fixed-size tmpfs ----------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 48 MB tmpfs of its own (the tests run as root); unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)],
                            capture_output=True, text=True)
    assert result.returncode == 0, "a tmpfs for the full-disk test needs root: %s" % result.stderr
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder):
    """Write a file into ``folder`` until its disk is full, down to the last byte; its path."""
    path = os.path.join(str(folder), "filler")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            try:
                while True:
                    os.write(descriptor, block)
            except OSError:
                pass
    finally:
        os.close(descriptor)
    return path


@pytest.mark.parametrize("when", ["reference", "shard"])
def test_a_disk_that_fills_mid_run_fails_the_job_and_the_rerun_keeps_finished_shards(
        small_disk, models_folder, when):
    """The disk fills while the reference job runs (before its weights are written), or after
    the first cell, while the next one times and then writes its shard."""
    workdir = small_disk / "run"
    workdir.mkdir()
    config = tiny_config(workdir, models_folder)
    process, log_path = start(workdir, config)
    filler = None
    try:
        if when == "reference":
            wait_for(lambda: os.path.exists(os.path.join(
                str(workdir), "results", "logs", "reference")), "the reference job's start")
        else:
            wait_for(lambda: steps_done(log_path, 2), "the first cell's end")
        filler = fill(small_disk)
        process.wait(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    kept = finished_shards(workdir)
    with open(log_path) as log:
        said_then = log.read()
    assert process.returncode != 0
    assert "Error in rule %s" % ("make_reference" if when == "reference" else "run_cell") in \
        said_then, said_then[-3000:]
    assert len(kept) == (0 if when == "reference" else 1)
    os.remove(filler)  # the recovery: free space, then the same command
    if when == "reference":  # nothing was finished: the same command plans every job again
        plan = snakemake(workdir, "-n", "--cores", "all", "--configfile", config, check=False)
        assert plan.returncode == 0, said(plan)[-3000:]
        assert planned_jobs(plan)["make_reference"] == "1" and planned_jobs(plan)["run_cell"] == "2"
        return
    resumed = snakemake(workdir, "--cores", "all", "--configfile", config, check=False)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for path, content in kept.items():
        assert read(path) == content, path
    assert len(finished_shards(workdir)) == 2
    assert planned_jobs(resumed)["run_cell"] == "1"  # the cell the full disk stopped


def test_a_run_its_disk_cannot_hold_is_refused_with_both_figures(small_disk, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(os.path.join(REPO, "config", "models", "distilbert-base-uncased.json"),
                str(models))
    workdir = small_disk / "run"
    workdir.mkdir()
    config = tiny_config(workdir, models, models=["distilbert-base-uncased"])
    planned = snakemake(workdir, "-n", "--cores", "all", "--configfile", config, check=False)
    assert planned.returncode == 0, said(planned)[-2000:]  # a dry run writes nothing
    result = snakemake(workdir, "--cores", "all", "--configfile", config, check=False)
    assert result.returncode != 0
    line = next(line for line in said(result).splitlines() if line.startswith("this run would"))
    found = re.match(r"this run would write about ([\d.]+) MB under (\S+) \(references ([\d.]+) "
                     r"MB, artifacts 0.0 MB, shards [\d.]+ MB, the store's copy of the shards "
                     r"[\d.]+ MB\), and that disk has ([\d.]+) MB "
                     r"free", line)
    assert found and found.group(2) == os.path.join(str(workdir), "results"), line
    total, references, free = map(float, found.group(1, 3, 4))
    assert 400 < references <= total and free <= 48 * 1.05, line  # DistilBERT: 2 x 66M x 4 B
    assert not os.path.exists(str(workdir / "results"))


# --- bad input: one line each, before any job ---------------------------------------------------

@pytest.mark.parametrize("case", ["not JSON", "a key missing",
                                  "a type without a TensorFlow class"])
def test_a_broken_model_config_is_one_line_naming_the_file(tmp_path, case):
    """Each kind of broken model config is a unit case in tests/host/plan/test_planner.py; two
    of them end to end, so no traceback reaches the console."""
    text, words = BROKEN_MODEL_CONFIGS[case]
    models = tmp_path / "models"
    models.mkdir()
    (models / "broken.json").write_text(text)
    config = tiny_config(tmp_path, models, models=["broken"])
    result = snakemake(tmp_path, "-n", "--cores", "all", "--configfile", config, check=False)
    assert result.returncode != 0
    path = str(models / "broken.json")
    lines = [line for line in said(result).splitlines() if line.startswith(path)]
    assert len(lines) == 1 and words in lines[0], said(result)[-2000:]
    assert "Traceback" not in said(result) and "plan.py" not in said(result)
    assert not os.path.exists(str(tmp_path / "results"))


def test_an_oversized_plan_is_refused_with_its_count_before_the_graph(tmp_path, models_folder):
    config = tiny_config(tmp_path, models_folder)
    started = time.time()
    result = snakemake(tmp_path, "-n", "--cores", "all", "--configfile", config, "--config",
                       "replicates=100000", check=False, timeout=120)
    elapsed = time.time() - started
    assert result.returncode != 0
    assert ("this config makes 200001 jobs (2 cells x 100000 replicates, 1 references, 0 "
            "exports; 300000 points), more than config key 'max_jobs' allows (5000)"
            in said(result)), said(result)[-2000:]
    # Unbounded, this plan ran for minutes in gigabytes; refused, it costs Snakemake's start.
    assert elapsed < 60
    # max_jobs raises the limit for those who mean it (the boundary: host/plan/test_planner.py).
    raised = snakemake(tmp_path, "-n", "--cores", "all", "--configfile", config, "--config",
                       "replicates=2", "max_jobs=5", check=False)
    assert raised.returncode == 0 and planned_jobs(raised)["run_cell"] == "4", said(raised)[-2000:]
