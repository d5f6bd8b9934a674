"""The results store: every run kept, adds idempotent and atomic, readers never blocked, the
version-1 store still read, and the history's questions answered (duel/host/store/)."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import DUEL, QUICK, REPO, snakemake, write_config
from duel.host.store import archive, ingest, questions
from store_folders import STEAL, results_folder

V1 = os.path.join(REPO, "tests", "data", "store-v1")
DAY = "2026-01-%02dT00:00:00+00:00"


def duel(*args, env=None, timeout=300):
    return subprocess.run(DUEL + [str(arg) for arg in args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def stored(store):
    return archive.query(store, "SELECT run_id, count(*) AS n FROM points GROUP BY run_id "
                                "ORDER BY run_id")


@pytest.mark.unit
def test_the_same_run_added_twice_is_stored_once(tmp_path):
    store = str(tmp_path / "store")
    folder = results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1)
    assert ingest.add_folder(store, folder, create=True) == [("20260101T000000Z-1", 4)]
    assert ingest.add_folder(store, folder) == []
    answer = duel("store", "add", folder, "--store", store)
    assert answer.returncode == 0 and "1 runs" in answer.stdout, answer.stderr
    assert stored(store)["n"].tolist() == [2 * 2 * 3]  # cells x processes x points
    runs = questions.run_table(store)
    assert runs["machine"].tolist() == ["test-machine"]
    assert runs["headline"].iloc[0].startswith("eager/eager 0.6")


@pytest.mark.unit
def test_a_corrupt_shard_is_refused_by_name_and_nothing_is_added(tmp_path):
    store = str(tmp_path / "store")
    ingest.add_folder(store, results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1),
                      create=True)
    folder = results_folder(tmp_path / "b", "20260102T000000Z-2", DAY % 2)
    bad = os.path.join(folder, "shards", "current", "cpu", "pytorch", "eager", "fp32",
                       "inference", "gpt2", "r2.parquet")
    with open(bad, "r+b") as handle:
        handle.truncate(100)
    answer = duel("store", "add", folder, "--store", store)
    assert answer.returncode == 2
    assert answer.stderr.count("\n") == 1 and bad in answer.stderr, answer.stderr
    assert archive.run_ids(store) == ["20260101T000000Z-1"]
    manifest = os.path.join(folder, "runs", "20260102T000000Z-2", "manifest.json")
    shutil.rmtree(os.path.dirname(bad))
    with open(manifest, "w") as handle:
        handle.write('{"status": "succ')
    answer = duel("store", "add", folder, "--store", store)
    assert answer.returncode == 2 and manifest in answer.stderr and "half-written" in answer.stderr


@pytest.mark.unit
def test_a_kill_during_an_add_leaves_the_earlier_runs_and_readers_never_wait(tmp_path):
    store = str(tmp_path / "store")
    ingest.add_folder(store, results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1),
                      create=True)
    folder = results_folder(tmp_path / "b", "20260102T000000Z-2", DAY % 2)
    env = dict(os.environ, **{archive.PAUSE_ENV: "60"})
    adding = subprocess.Popen(DUEL + ["store", "add", folder, "--store", store], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert "paused" in adding.stderr.readline()
        # Mid-add: its files are written, not yet a run. A reader sees the store as it was.
        incoming = [name for name in os.listdir(store) if name.startswith(archive.INCOMING)]
        assert incoming and os.listdir(os.path.join(store, incoming[0]))
        listed = duel("runs", "--store", store, "--csv", timeout=30)
        assert listed.returncode == 0
        assert "20260101T000000Z-1" in listed.stdout and "-2" not in listed.stdout
        adding.send_signal(signal.SIGKILL)
        adding.wait(30)
    finally:
        adding.kill()
    assert archive.run_ids(store) == ["20260101T000000Z-1"]
    assert stored(store)["run_id"].tolist() == ["20260101T000000Z-1"]
    # The next writer clears what the killed one left and adds the run whole.
    assert ingest.add_folder(store, folder) == [("20260102T000000Z-2", 4)]
    assert not [name for name in os.listdir(store) if name.startswith(archive.INCOMING)]
    assert stored(store)["n"].tolist() == [12, 12]


@pytest.mark.unit
def test_a_kill_while_a_stored_run_grows_leaves_it_whole_as_it_was(tmp_path):
    """Shards added to a run already stored: killed between the renames that put its grown copy
    in place, the store keeps the run as it was; the next add grows it, points and record."""
    store = str(tmp_path / "store")
    run_id = "20260101T000000Z-1"
    ingest.add_folder(store, results_folder(tmp_path / "a", run_id, DAY % 1), create=True)
    before = questions.run_table(store)
    grown = results_folder(tmp_path / "a", run_id, DAY % 1, processes=3)  # adds r3 per cell
    env = dict(os.environ, **{archive.PAUSE_ENV: "60", archive.PAUSE_AT_ENV: "swap"})
    adding = subprocess.Popen(DUEL + ["store", "add", grown, "--store", store], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert "paused swap" in adding.stderr.readline()
        assert not os.path.exists(archive.run_folder(store, run_id))  # mid-swap
        adding.send_signal(signal.SIGKILL)
        adding.wait(30)
    finally:
        adding.kill()
    with archive.writing(store):  # the next writer puts the run back
        pass
    assert stored(store)["n"].tolist() == [12]
    assert questions.run_table(store)["points"].tolist() == before["points"].tolist()
    assert ingest.add_folder(store, grown) == [(run_id, 2)]
    assert stored(store)["n"].tolist() == [18]
    assert questions.run_table(store)["processes"].tolist() == [3]
    assert not glob.glob(os.path.join(store, archive.REPLACED + "*"))


@pytest.mark.unit
def test_two_processes_adding_at_once_both_land(tmp_path):
    store = str(tmp_path / "store")
    folders = [results_folder(tmp_path / name, "2026010%dT000000Z-%d" % (day, day), DAY % day)
               for day, name in ((1, "a"), (2, "b"))]
    env = dict(os.environ, **{archive.PAUSE_ENV: "2"})  # each holds the lock a while
    started = time.time()
    adders = [subprocess.Popen(DUEL + ["store", "add", folder, "--store", store, "--create"],
                               env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for folder in folders]
    answers = [adder.communicate(timeout=120) for adder in adders]
    assert [adder.returncode for adder in adders] == [0, 0], answers
    assert time.time() - started >= 4  # one waited for the other's lock
    assert archive.run_ids(store) == ["20260101T000000Z-1", "20260102T000000Z-2"]
    assert stored(store)["n"].tolist() == [12, 12]


@pytest.mark.unit
def test_the_version_1_store_opens_and_answers(tmp_path):
    store = str(tmp_path / "store-v1")
    shutil.copytree(V1, store)  # a copy: a reader writes nothing, a test must not either
    assert archive.version(store) == 1
    runs = questions.run_table(store)
    assert runs["run_id"].tolist() == ["20260101T000000Z-101", "20260102T000000Z-102"]
    assert (runs["points"] == 6).all() and (runs["processes"] == 2).all()
    point = questions.parse_point("gpt2/pytorch/eager/2x8")
    table = questions.history(store, [point])
    assert len(table) == 2 and (table["processes"] == 2).all()
    assert table["figure_ms"].iloc[1] / table["figure_ms"].iloc[0] == pytest.approx(1.1, 0.01)
    assert (table["low_ms"] < table["figure_ms"]).all()
    assert (table["high_ms"] > table["figure_ms"]).all()
    assert questions.run_table(store)["noisy"].isna().all()  # not recorded: unknown, not quiet
    ingest.add_folder(store, results_folder(tmp_path / "c", "20260103T000000Z-3", DAY % 3,
                                            disturbed=True))
    runs = questions.run_table(store)
    assert [questions.flag(value) for value in runs["noisy"]] == [None, None, True]
    assert questions.history(store, [point])["noisy"].tolist() == [None, None, True]
    listed = duel("runs", "--store", store)
    assert listed.returncode == 0 and listed.stdout.count("noisy") == 1, listed.stdout
    newer = tmp_path / "newer"
    shutil.copytree(V1, str(newer))
    (newer / archive.VERSION_FILE).write_text("%d\n" % (archive.VERSION + 1))
    answer = duel("runs", "--store", newer)
    assert answer.returncode == 2 and "update it" in answer.stderr


@pytest.mark.unit
def test_an_index_without_todays_columns_is_made_again_from_the_runs(tmp_path):
    """An index written before a column was indexed covers the same files: it is still made
    again, so that an add never extends an index of other columns."""
    store = str(tmp_path / "store-v1")
    shutil.copytree(V1, store)
    whole = archive.index_table(store)
    archive._write_index(store, whole.drop_columns([whole.schema.names[-1]]))
    assert archive.index_table(store).schema.equals(archive.INDEX_SCHEMA)
    ingest.add_folder(store, results_folder(tmp_path / "c", "20260103T000000Z-3", DAY % 3))
    index = archive.index_table(store)
    assert index.schema.equals(archive.INDEX_SCHEMA)
    assert sorted(set(index.column("run_id").to_pylist())) == [
        "20260101T000000Z-101", "20260102T000000Z-102", "20260103T000000Z-3"]


@pytest.mark.unit
def test_a_run_whose_points_stayed_disturbed_is_stored_listed_and_left_out_of_trends(tmp_path):
    store = str(tmp_path / "store")
    # Three quiet runs, then two at twice the time whose every point stayed disturbed.
    for day, scale, disturbed in ((1, 1.0, False), (2, 1.01, False), (3, 0.99, False),
                                  (4, 2.0, True), (5, 2.02, True)):
        ingest.add_folder(store, results_folder(tmp_path / str(day), "2026010%dT000000Z-%d"
                                                % (day, day), DAY % day, scale,
                                                disturbed=disturbed), create=True)
    runs = questions.run_table(store)
    assert runs["noisy"].tolist() == [False] * 3 + [True] * 2
    assert (runs["counted_points"] == 12).all()  # cells x processes x points
    assert runs["disturbed_points"].tolist() == [0, 0, 0, 12, 12]
    assert runs["steal_share"].tolist() == pytest.approx([0.0] * 3 + [STEAL] * 2)
    listed = duel("runs", "--store", store)
    assert listed.returncode == 0
    lines = [line for line in listed.stdout.splitlines() if "2026010" in line]
    assert ["success, noisy: 12 of 12 points disturbed, steal 9%" in line
            for line in lines] == [False] * 3 + [True] * 2, listed.stdout
    # Quiet, the last two runs would be a step; noisy, they are left out of the fit.
    table = questions.trend(store, [questions.parse_point("gpt2/pytorch/eager/1x64")])
    assert table["runs"].tolist() == [5] and table["noisy_runs"].tolist() == [2]
    assert table["ratio"].isna().all()
    answer = duel("trend", "--store", store)
    assert answer.returncode == 0 and "noisy runs left out: 2" in answer.stdout, answer.stdout


@pytest.mark.unit
def test_rm_takes_a_run_out_of_every_question(tmp_path):
    store = str(tmp_path / "store")
    shutil.copytree(V1, store)
    assert duel("store", "rm", "20260101T000000Z-101", "--store", store).returncode == 0
    assert archive.run_ids(store) == ["20260102T000000Z-102"]
    history = duel("history", "gpt2/pytorch/eager/1x8", "--store", store, "--csv")
    assert "20260101T000000Z-101" not in history.stdout and "-102" in history.stdout
    again = duel("store", "rm", "20260101T000000Z-101", "--store", store)
    assert again.returncode == 2 and "no run" in again.stderr


@pytest.mark.unit
def test_trend_finds_a_step_only_where_runs_on_both_sides_agree(tmp_path):
    store = str(tmp_path / "store")
    scales = [1.0, 1.01, 0.99, 2.0, 2.02]  # a step at the fourth run
    for day, scale in enumerate(scales, start=1):
        ingest.add_folder(store, results_folder(tmp_path / str(day), "2026010%dT000000Z-%d"
                                                % (day, day), DAY % day, scale), create=True)
    table = questions.trend(store, [questions.parse_point("gpt2/pytorch/eager/1x64")])
    assert len(table) == 1 and table["runs"].iloc[0] == 5
    step = table.iloc[0]
    assert step["step_run"] == "20260104T000000Z-4" and step["verdict"] == "slower"
    assert step["low"] > 1.05 and step["ratio"] == pytest.approx(2.0, 0.05)
    answer = duel("trend", "--store", store)
    assert answer.returncode == 1 and "slower at run 20260104T000000Z-4" in answer.stdout
    # One noisy run at the end is not a step.
    flat = str(tmp_path / "flat")
    for day, scale in enumerate([1.0, 1.01, 0.99, 1.0, 3.0], start=1):
        ingest.add_folder(flat, results_folder(tmp_path / ("f%d" % day), "2026010%dT000000Z-%d"
                                               % (day, day), DAY % day, scale), create=True)
    assert questions.trend(flat)["ratio"].isna().all()
    assert duel("trend", "--store", flat).returncode == 0


@pytest.mark.unit
def test_compare_takes_stored_run_ids(tmp_path):
    store = str(tmp_path / "store")
    shutil.copytree(V1, store)
    answer = duel("compare", "20260101T000000Z-101", "20260102T000000Z-102", "--store", store,
                  "--output", tmp_path / "comparison")
    # The second run is 10% slower everywhere; two processes a side leave that not clear.
    assert answer.returncode == 0, answer.stderr
    table = pd.read_csv(str(tmp_path / "comparison" / "comparison.csv"))
    assert len(table) == 6 and table["ratio"].between(1.08, 1.11).all()
    assert (table["interval"] == "between processes").all()
    changed = open(str(tmp_path / "comparison" / "comparison.md")).read()
    assert "| git_commit |" in changed and "shard_sha256" not in changed
    missing = duel("compare", "20260101T000000Z-101", "nosuch", "--store", store,
                   "--output", tmp_path / "c2")
    assert missing.returncode == 2 and "nosuch" in missing.stderr


# The real workflow: every run lands in the store when it ends, and a run killed before its end
# is kept by the next run's start. Steps are found on constructed figures above: two real runs
# cannot hold one (each side of a step needs MIN_RUNS runs), whatever the host's noise.
TINY = dict(QUICK, models=["distilbert-base-uncased"], batch_sizes=[1], sequence_lengths=[128],
            modes={"pytorch": ["eager"]}, frameworks=["pytorch"],
            replicates=2, max_replicates=2, machine="tiny-box",
            duel=dict(QUICK["duel"], min_samples=10, min_time_s=0.3))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two tiny runs whose store is named by $DUEL_STORE (config key store unset)."""
    workdir = tmp_path_factory.mktemp("store-runs")
    config = write_config(workdir, **TINY)
    env = dict(os.environ, DUEL_STORE=str(workdir / "shared-store"))
    for _ in range(2):
        snakemake(workdir, "--cores", "2", "--configfile", config, "--forcerun", "run_cell",
                  env=env)
    return workdir, config, env


@pytest.mark.workflow
def test_every_run_is_stored_and_answers_history_and_trend(two_runs):
    workdir, _, env = two_runs
    store = env["DUEL_STORE"]
    assert not os.path.exists(os.path.join(str(workdir), "results", "store"))
    runs = questions.run_table(store)
    assert len(runs) == 2 and (runs["status"] == "success").all()
    assert (runs["machine"] == "tiny-box").all() and (runs["processes"] == 2).all()
    listed = duel("runs", env=env)  # the same store, found the same way
    assert listed.returncode == 0 and all(run in listed.stdout for run in runs["run_id"])
    point = "distilbert-base-uncased/pytorch/eager/1x128"
    history = duel("history", point, "--store", store, "--csv")
    table = pd.read_csv(pd.io.common.StringIO(history.stdout))
    assert table["run_id"].tolist() == runs["run_id"].tolist()
    assert (table["processes"] == 2).all() and table["low_ms"].notna().all()
    assert (table["low_ms"] <= table["figure_ms"]).all()
    assert (table["figure_ms"] <= table["high_ms"]).all()
    trend = questions.trend(store, [questions.parse_point(point)])
    assert len(trend) == 1 and trend["runs"].iloc[0] == 2, trend.T
    assert trend["ratio"].isna().all()
    answer = duel("trend", point, "--store", store)
    assert answer.returncode == 0, answer.stdout + answer.stderr


@pytest.mark.workflow
def test_every_setting_that_changes_a_measurement_runs_the_cell_again(two_runs):
    workdir, config, env = two_runs
    planned = lambda *extra: snakemake(workdir, "-n", "--cores", "2", "--configfile", config,
                                       *extra, env=env).stdout
    assert "Nothing to be done" in planned()
    for setting in ("cell_threads=1", "duel={'min_samples': 11}", "seed=1",
                    "disturbance={'max_canary_score': 3.0}"):
        said = planned("--config", setting)
        assert re.search(r"run_cell\s+2\b", said), (setting, said[-2000:])


@pytest.mark.workflow
def test_a_damaged_store_costs_the_run_one_line(two_runs, tmp_path):
    workdir, config, env = two_runs
    copy = tmp_path / "copy"
    shutil.copytree(str(workdir), str(copy), symlinks=True)
    store = str(copy / "shared-store")
    env = dict(env, DUEL_STORE=store)
    first, second = archive.run_ids(store)
    (points,) = glob.glob(os.path.join(archive.run_folder(store, first), "points-*.parquet"))
    with open(points, "r+b") as handle:
        handle.truncate(100)
    os.remove(os.path.join(store, archive.INDEX))  # as a copy made in part leaves it
    result = snakemake(copy, "--cores", "2", "--configfile", config, "--forcerun", "run_cell",
                       env=env)
    assert "Traceback" not in result.stderr
    assert "store: run %s set aside" % first in result.stderr, result.stderr[-3000:]
    assert archive.run_ids(store)[0] == second and len(archive.run_ids(store)) == 2
    held = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\nhandle = open(sys.argv[1], 'a')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(600)"),
        os.path.join(store, archive.LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout.readline().strip() == "held"
        env = dict(env, **{archive.LOCK_WAIT_ENV: "3"})
        locked = snakemake(copy, "--cores", "2", "--configfile", config, "--forcerun", "run_cell",
                           env=env)
        assert "is locked by" in locked.stderr and "the run goes on" in locked.stderr
    finally:
        held.kill()


@pytest.mark.workflow
def test_a_killed_run_is_kept_by_the_next_run(tmp_path):
    config = write_config(tmp_path, **TINY)
    snakemake(tmp_path, "--cores", "2", "--configfile", config)
    store = os.path.join(str(tmp_path), "results", "store")
    first = archive.run_ids(store)
    # As after a kill -9: the run's end never came, so it is not in the store, and its manifest
    # still says running. The next run, about to measure those cells again, keeps them first.
    shutil.rmtree(store)
    manifest = os.path.join(str(tmp_path), "results", "runs", first[0], "manifest.json")
    record = json.load(open(manifest))
    record.update(status="running", ended_at=None, shards=[])
    with open(manifest, "w") as handle:
        json.dump(record, handle)
    snakemake(tmp_path, "--cores", "2", "--configfile", config, "--forcerun", "run_cell")
    runs = questions.run_table(store)
    assert len(runs) == 2 and runs["run_id"].iloc[0] == first[0], runs
    assert runs["status"].tolist() == ["interrupted", "success"]
    assert (runs["points"] == 1).all()


@pytest.mark.unit
def test_an_older_duel_folder_is_migrated_on_the_way_in(tmp_path):
    """Shards from before precision, replicates and manifests: stored in today's columns, as
    one run named by its content."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder = tmp_path / "old" / "results" / "shards"
    folder.mkdir(parents=True)
    old = {"era": ["current"] * 2, "device": ["cpu"] * 2, "framework": ["pytorch"] * 2,
           "mode": ["eager"] * 2, "task": ["inference"] * 2, "model": ["gpt2"] * 2,
           "batch_size": [1, 1], "seq_len": [8, 64], "method": ["hf2019"] * 2,
           "status": ["ok", "oom"], "samples": [[1.0, 1.1, 1.2, 1.0, 1.1], None],
           "mean": [1.08, None], "median": [1.1, None], "n_samples": [5, None]}
    pq.write_table(pa.table(old), str(folder / "gpt2.parquet"))
    store = str(tmp_path / "store")
    ((run_id, count),) = ingest.add_folder(store, str(tmp_path / "old"), create=True)
    assert run_id.startswith(ingest.UNRECORDED) and count == 1
    rows = questions.run_frame(store, run_id)
    assert rows["precision"].tolist() == ["fp32"] * 2 and rows["replicate"].tolist() == [1, 1]
    assert rows["method"].tolist() == ["timeit"] * 2
    table = questions.history(store, [questions.parse_point("gpt2/pytorch/eager/1x8")],
                              method="timeit")
    assert table["figure_ms"].tolist() == [1.08]
    assert questions.run_table(store)["status"].tolist() == ["unrecorded"]
