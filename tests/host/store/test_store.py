"""The results store: every run kept, adds idempotent and atomic, readers never blocked, a store
of an older version read and migrated, a newer one refused, and the history's questions
answered (duel/host/store/)."""
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import DUEL, QUICK, REPO, TEST_MODELS, snakemake, write_config
from duel.host.store import archive, ingest, questions
from store_folders import STEAL, hold_lock, paused_add, results_folder

V1 = os.path.join(REPO, "tests", "data", "store-v1")
# A store of the previous release, written by Duel at ef4e008's own workflow: two runs of
# tiny-bert-16pos (tests/data/models) at 1x8, PyTorch eager and TensorFlow eager and function
# each in a process of its own, two processes per cell (replicates 2, QUICK's timing).
EF4E008 = os.path.join(REPO, "tests", "data", "store-ef4e008")
EF4E008_POINTS = ["tiny-bert-16pos/%s/1x8" % cell
                  for cell in ("pytorch/eager", "tensorflow/eager", "tensorflow/function")]
# A store of version 2, written by Duel at 8220d59's own workflow: two runs of task generation,
# tiny-gpt2 at 1x8 generating 6 tokens, PyTorch eager and TensorFlow eager, two processes per
# cell (its README.md says how).
V2 = os.path.join(REPO, "tests", "data", "store-8220d59")
V2_POINTS = ["tiny-gpt2/%s/1x8" % cell for cell in ("pytorch/eager", "tensorflow/eager")]
# The columns of a store's files at each version (archive.RUN_SCHEMA and POINTS_SCHEMA; from
# version 3 INDEX_SCHEMA too).
COLUMNS_OF_VERSION = {2: "406928d8a970edf3210ade8c5f9093e0fa9f637c62f9c97022121062fe9a5bbf",
                      3: "c6c95e5b649802f1b1bdd2c627e15c640917691a3147105f45a06db9f666a6f5"}
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
    adding = paused_add(folder, store, 60)
    try:
        assert "paused before 20260102T000000Z-2" in adding.stderr.readline()
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
    adding = paused_add(grown, store, 60)
    try:
        assert "paused before %s" % run_id in adding.stderr.readline()
        assert not os.path.exists(archive.run_folder(store, run_id))  # mid-swap
        assert os.path.isdir(os.path.join(store, archive.REPLACED + run_id))
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
    started = time.time()
    adders = [paused_add(folder, store, 2, "--create")  # each holds the lock a while
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
    assert archive.version(store) == archive.VERSION  # the add migrated it


@pytest.mark.unit
def test_a_generation_points_history_follows_its_first_token_and_per_token_times(tmp_path):
    """The version 2 store's generation points, read as they are and after an add migrated
    them: each run's time to first token and per output token is the median of its processes'
    (Student's t interval over them), with their tokens per second and tokens that agreed; a
    point of task inference has none."""
    store = str(tmp_path / "store")
    shutil.copytree(V2, store)
    rows = archive.query(store, "SELECT * FROM points")
    point = questions.parse_point(V2_POINTS[1])
    for migrated in (False, True):
        if migrated:
            ingest.add_folder(store, results_folder(tmp_path / "c", "20270103T000000Z-3",
                                                    "2027-01-03T00:00:00+00:00"))
            assert archive.version(store) == archive.VERSION
        for figure in ("first_token_ms", "per_token_ms"):
            table = questions.history(store, [point], figure)
            assert len(table) == 2 and (table["processes"] == 2).all()
            for _, run in table.iterrows():
                mine = rows[(rows["run_id"] == run["run_id"]) &
                            (rows["framework"] == "tensorflow")]
                assert run["figure_ms"] == pytest.approx(mine[figure].median())
                assert run["low_ms"] < run["figure_ms"] < run["high_ms"]
                assert run["tokens_per_s"] == pytest.approx(mine["tokens_per_s"].median())
                assert run["tokens_agree"] == mine["tokens_agree"].min() == 6
        whole = questions.history(store, [point])
        assert (whole["figure_ms"] > table["figure_ms"]).all()  # a whole call: several tokens
    inference = questions.parse_point("gpt2/pytorch/eager/1x8")
    assert len(questions.history(store, [inference])) == 1
    assert questions.history(store, [inference], "first_token_ms").empty
    said = duel("history", V2_POINTS[1], "--figure", "per_token_ms", "--store", store)
    assert said.returncode == 0 and "tokens_per_s" in said.stdout, said.stderr
    wrong = duel("history", V2_POINTS[1], "--figure", "tokens_agree", "--store", store)
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr


def answers(store, points=EF4E008_POINTS):
    """What duel runs, history (of the time per call, then of the time to first token) and
    trend print of a store's ``points`` (trend: 1 where it finds a step), and every stored row
    (the points view, in a fixed order)."""
    said = [duel("runs", "--store", store, "--csv"),
            duel("history", *points, "--store", store, "--csv"),
            duel("history", *points, "--store", store, "--csv", "--figure", "first_token_ms"),
            duel("trend", *points, "--store", store)]
    assert [answer.returncode for answer in said][:3] == [0, 0, 0], [a.stderr for a in said]
    assert said[3].returncode in (0, 1) and said[3].stdout, said[3].stderr
    rows = archive.query(store, "SELECT * FROM points ORDER BY run_id, shard, mode, replicate, "
                                "attempt, batch_size, seq_len")
    return [answer.stdout for answer in said], rows


def answered(store):
    """The same questions asked in this process: the runs, the points' history and trend, and
    every stored row."""
    points = [questions.parse_point(point) for point in EF4E008_POINTS]
    return [questions.run_table(store), questions.history(store, points),
            questions.trend(store, points), archive.query(
                store, "SELECT * FROM points ORDER BY run_id, shard, mode, replicate")]


def assert_same(found, expected):
    for table, before in zip(found, expected):
        pd.testing.assert_frame_equal(table, before)


def files_of(store):
    """{path under the store: (inode, modification time)} of every file in it."""
    return dict((os.path.relpath(os.path.join(folder, name), store),
                 (os.stat(os.path.join(folder, name)).st_ino,
                  os.stat(os.path.join(folder, name)).st_mtime_ns))
                for folder, _, names in os.walk(store) for name in names)


def leftovers(store):
    return [name for name in os.listdir(store)
            if name.startswith((archive.BEFORE_MIGRATION, archive.INCOMING, archive.REPLACED))]


def in_todays_columns(path):
    schema = archive.RUN_SCHEMA if path.endswith(archive.RUN_FILE) else archive.POINTS_SCHEMA
    return pq.read_schema(path).equals(schema)


def site_of(store, out):
    """The site ``duel publish`` makes of the store: {file: its bytes, the minute it was
    published left out}."""
    published = duel("publish", out, "--store", store)
    assert published.returncode == 0, published.stderr
    return dict((os.path.relpath(os.path.join(folder, name), str(out)), re.sub(
        rb"Published \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"Published",
        open(os.path.join(folder, name), "rb").read()))
        for folder, _, names in os.walk(str(out)) for name in names)


# A store of each earlier version: its folder, its points, its version, the lines of its
# points' history (of the time per call, of the time to first token) and its stored rows.
RELEASES = {"ef4e008": (EF4E008, EF4E008_POINTS, 1, (7, 1), 12),
            "8220d59": (V2, V2_POINTS, 2, (5, 5), 8)}


@pytest.mark.unit
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_a_store_of_an_earlier_release_is_migrated_once_by_its_first_writer(tmp_path, release):
    """Read as it is, migrated under the lock by the first writer and only by it: every value
    kept, duel runs, history, trend and publish saying the same before and after."""
    folder, points, old_version, history_lines, stored_rows = RELEASES[release]
    store = str(tmp_path / "store")
    shutil.copytree(folder, store)
    old = dict((path, pq.read_table(path))
               for path in glob.glob(os.path.join(store, "runs", "*", "*.parquet")))
    untouched = files_of(store)
    said, rows = answers(store, points)
    site = site_of(store, tmp_path / "site-before")
    assert said[0].count("\n") == 3 and len(rows) == stored_rows
    assert (said[1].count("\n"), said[2].count("\n")) == history_lines
    # readers write nothing
    assert archive.version(store) == old_version and files_of(store) == untouched
    holder = hold_lock(store)
    try:  # no migration without the writer's lock
        locked = duel("store", "check", "--fix", "--store", store,
                      env=dict(os.environ, **{archive.LOCK_WAIT_ENV: "1"}))
        assert locked.returncode != 0 and "is locked by" in locked.stderr, locked.stderr
    finally:
        holder.kill()
        holder.wait()
    assert archive.version(store) == old_version
    assert dict((path, when) for path, when in files_of(store).items()
                if path != archive.LOCK) == untouched
    first = duel("store", "check", "--fix", "--store", store)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("migrating it to version %d" % archive.VERSION) == 1, first.stderr
    assert archive.version(store) == archive.VERSION and leftovers(store) == []
    for path, table in old.items():  # every file in today's columns, every value kept
        assert in_todays_columns(path), path
        migrated = pq.read_table(path)
        for name in table.column_names:
            assert migrated.column(name).to_pylist() == table.column(name).to_pylist(), name
    said_after, rows_after = answers(store, points)
    assert said_after == said
    pd.testing.assert_frame_equal(rows_after, rows)
    assert site_of(store, tmp_path / "site-after") == site
    migrated_files = files_of(store)
    added = duel("store", "add", results_folder(tmp_path / "a", "20260103T000000Z-3", DAY % 3),
                 "--store", store)
    assert added.returncode == 0 and "migrating" not in added.stderr, added.stderr
    assert all(files_of(store)[path] == migrated_files[path] for path in migrated_files
               if path.startswith(archive.RUNS + os.sep))
    assert all(in_todays_columns(path) for path in
               glob.glob(os.path.join(archive.run_folder(store, "20260103T000000Z-3"), "*")))


def grown_old_store(store, copies):
    """The ef4e008 store with each run copied ``copies`` times under new run ids, every file in
    the columns and types that release wrote (only run_id changed), without an index."""
    shutil.copytree(EF4E008, store)
    os.remove(os.path.join(store, archive.INDEX))
    for run_id in archive.run_ids(store):
        for copy in range(copies):
            new_id = "%s-copy%d" % (run_id, copy)
            os.makedirs(archive.run_folder(store, new_id))
            for path in glob.glob(os.path.join(archive.run_folder(store, run_id), "*")):
                table = pq.read_table(path)
                where = table.schema.get_field_index("run_id")
                table = table.set_column(where, table.schema.field(where), pa.array(
                    [new_id] * table.num_rows, table.schema.field(where).type))
                pq.write_table(table, os.path.join(archive.run_folder(store, new_id),
                                                   os.path.basename(path)))


@pytest.mark.unit
def test_a_migration_killed_midway_leaves_a_store_that_reads_and_migrates_on_the_next_write(
        tmp_path):
    store = str(tmp_path / "store")
    grown_old_store(store, copies=10)
    every = archive.run_ids(store)
    before = answered(store)
    migrating = subprocess.Popen(DUEL + ["store", "check", "--fix", "--store", store],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while len(glob.glob(os.path.join(store, archive.BEFORE_MIGRATION + "*"))) < 3:
        assert migrating.poll() is None and time.time() < deadline, migrating.communicate()
        time.sleep(0.005)
    migrating.send_signal(signal.SIGKILL)
    migrating.wait(30)
    # Midway: some runs migrated, their old files kept aside; the version still the old one.
    assert archive.version(store) == 1
    migrated = [run_id for run_id in archive.run_ids(store) if in_todays_columns(
        glob.glob(os.path.join(archive.run_folder(store, run_id), "points-*"))[0])]
    assert 3 <= len(migrated) < len(every)
    assert len(glob.glob(os.path.join(store, archive.BEFORE_MIGRATION + "*"))) >= len(migrated)
    assert_same(answered(store), before)
    # As a kill between a run's two renames leaves it: its old folder aside, none in its place.
    caught = sorted(set(every) - set(migrated))[0]
    os.rename(archive.run_folder(store, caught),
              os.path.join(store, archive.BEFORE_MIGRATION + caught))
    again = duel("store", "check", "--fix", "--store", store)
    assert again.returncode == 0 and "migrating" in again.stderr, again.stderr
    assert archive.version(store) == archive.VERSION and leftovers(store) == []
    assert archive.run_ids(store) == every
    assert all(in_todays_columns(path)
               for path in glob.glob(os.path.join(store, "runs", "*", "*.parquet")))
    assert_same(answered(store), before)


@pytest.mark.unit
def test_a_run_folder_copied_in_from_an_older_store_is_set_aside_by_name(tmp_path):
    store = str(tmp_path / "store")
    ingest.add_folder(store, results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1),
                      create=True)
    old = archive.run_ids(EF4E008)[0]
    shutil.copytree(archive.run_folder(EF4E008, old), archive.run_folder(store, old))
    with archive.writing(store):
        pass
    assert archive.run_ids(store) == ["20260101T000000Z-1"]
    with open(os.path.join(store, archive.SET_ASIDE, old, "DAMAGED")) as handle:
        assert "not in this store's columns (version %d)" % archive.VERSION in handle.read()


@pytest.mark.unit
def test_a_store_newer_than_this_duel_is_refused_in_one_line_before_any_work(tmp_path):
    store = str(tmp_path / "newer")
    shutil.copytree(EF4E008, store)
    with open(os.path.join(store, archive.VERSION_FILE), "w") as handle:
        handle.write("%d\n" % (archive.VERSION + 1))
    untouched = files_of(store)
    first, second = archive.run_ids(store)
    folder = results_folder(tmp_path / "a", "20260103T000000Z-3", DAY % 3)
    site, comparison = tmp_path / "site", tmp_path / "comparison"
    for args in (("store", "add", folder), ("store", "check", "--fix"), ("store", "rm", first),
                 ("store", "sql", "SELECT 1"), ("runs",), ("history", EF4E008_POINTS[0]),
                 ("trend",), ("publish", site), ("compare", first, second, "--output",
                                                 comparison)):
        answer = duel(*args, "--store", store)
        assert answer.returncode == 2, (args, answer.stderr)
        assert answer.stderr.count("\n") == 1, (args, answer.stderr)
        assert "version %d store" % (archive.VERSION + 1) in answer.stderr, (args, answer.stderr)
    assert files_of(store) == untouched
    assert not os.path.exists(str(site)) and not os.path.exists(str(comparison))


@pytest.mark.unit
def test_the_stored_columns_change_only_with_the_version():
    columns = [[(field.name, str(field.type)) for field in schema]
               for schema in (archive.RUN_SCHEMA, archive.POINTS_SCHEMA, archive.INDEX_SCHEMA)]
    digest = hashlib.sha256(json.dumps(columns).encode()).hexdigest()
    assert COLUMNS_OF_VERSION.get(archive.VERSION) == digest, (
        "the store's columns changed: raise archive.VERSION, make archive.migrated read a store "
        "of the version before, and add {%d: %r} to COLUMNS_OF_VERSION"
        % (archive.VERSION + 1, digest))


@pytest.mark.unit
def test_a_run_record_column_the_store_does_not_declare_is_refused(tmp_path):
    store = str(tmp_path / "store")
    archive.create(store)
    results = results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1)
    rows = ingest.shard_rows(results, glob.glob(os.path.join(results, "shards", "**",
                                                             "*.parquet"), recursive=True))
    with pytest.raises(ValueError, match="not declared in archive.RUN_SCHEMA: energy_j"):
        archive.add(store, "20260101T000000Z-1", rows,
                    lambda frame: {"run_id": "20260101T000000Z-1", "energy_j": 1.0})
    assert archive.run_ids(store) == []


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
TINY = dict(QUICK, models=["tiny-bert-16pos"], batch_sizes=[1], sequence_lengths=[8],
            modes={"pytorch": ["eager"]}, frameworks=["pytorch"],
            replicates=2, max_replicates=2, machine="tiny-box",
            duel=dict(QUICK["duel"], min_samples=10, min_time_s=0.3))


def tiny_models(folder):
    """A models folder in ``folder`` with the tiny BERT (tests/data/models)."""
    models = os.path.join(str(folder), "models")
    os.makedirs(models, exist_ok=True)
    shutil.copy(os.path.join(TEST_MODELS, "tiny-bert-16pos.json"), models)
    return models


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two tiny runs whose store is named by $DUEL_STORE (config key store unset)."""
    workdir = tmp_path_factory.mktemp("store-runs")
    config = write_config(workdir, models_dir=tiny_models(workdir), **TINY)
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
    point = "tiny-bert-16pos/pytorch/eager/1x8"
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
    config = write_config(tmp_path, models_dir=tiny_models(tmp_path), **TINY)
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
