"""The store under damage: a damaged run is set aside or skipped, by name, and every command says
so in one line with an exit code of the table (never a traceback, never the 1 of a finding);
locks are waited on for a bounded time, naming who holds them; what the user removed stays
removed; a shard belongs to its run by content, whatever the file times (duel/host/store/)."""
import fcntl
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import DUEL
from duel.cell import files
from duel.host.provenance import runs
from duel.host.store import archive, ingest
from store_folders import hold_lock, results_folder

pytestmark = pytest.mark.unit

DAY = "2026-01-%02dT00:00:00+00:00"
POINT = "gpt2/pytorch/eager/1x8"


def duel(*args, env=None, cwd=None):
    return subprocess.run(DUEL + [str(arg) for arg in args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)


def two_run_store(tmp_path):
    store = str(tmp_path / "store")
    for day in (1, 2):
        ingest.add_folder(store, results_folder(tmp_path / str(day), "2026010%dT000000Z-%d"
                                                % (day, day), DAY % day), create=True)
    return store


def truncate(path, size=100):
    with open(path, "r+b") as handle:
        handle.truncate(size)


def one_line(answer):
    assert "Traceback" not in answer.stderr, answer.stderr
    return answer.stderr


def test_a_damaged_run_is_skipped_by_every_reader_and_said(tmp_path):
    store = two_run_store(tmp_path)
    (points,) = archive._in(archive.run_folder(store, "20260102T000000Z-2"), archive.POINTS_GLOB)
    truncate(points)
    os.remove(os.path.join(store, archive.INDEX))  # as after a copy: the index is made again
    for command in (["history", POINT], ["trend"], ["store", "sql",
                                                    "SELECT count(*) FROM points"]):
        answer = duel(*command, "--store", store)
        assert answer.returncode == 0, (command, answer.stderr)
        said = one_line(answer)
        assert "run 20260102T000000Z-2 skipped" in said and points in said, (command, said)
    run_file = os.path.join(archive.run_folder(store, "20260101T000000Z-1"), archive.RUN_FILE)
    truncate(run_file, 50)
    answer = duel("runs", "--store", store)
    assert answer.returncode == 0 and "20260101T000000Z-1 skipped" in one_line(answer)
    site = duel("publish", str(tmp_path / "site"), "--store", store)
    assert site.returncode in (0, 2, 3) and one_line(site).count("error:") <= 1
    check = duel("store", "check", "--store", store)
    assert check.returncode == 1 and "2 damaged" in check.stdout, check.stdout
    fixed = duel("store", "check", "--fix", "--store", store)
    assert fixed.returncode == 0 and "set aside" in fixed.stdout
    assert archive.run_ids(store) == []
    assert sorted(os.listdir(os.path.join(store, archive.SET_ASIDE))) == [
        "20260101T000000Z-1", "20260102T000000Z-2"]
    assert duel("store", "check", "--store", store).returncode == 0


def test_a_writer_sets_a_damaged_run_aside_and_adds_the_next(tmp_path):
    """A run folder copied into the store in part: the next add sets it aside and goes on."""
    store = two_run_store(tmp_path)
    copied = os.path.join(store, archive.RUNS, "20260103T000000Z-3")
    shutil.copytree(archive.run_folder(store, "20260102T000000Z-2"), copied)
    (points,) = archive._in(copied, archive.POINTS_GLOB)
    truncate(points)
    added = duel("store", "add", results_folder(tmp_path / "4", "20260104T000000Z-4", DAY % 4),
                 "--store", store)
    assert added.returncode == 0, added.stderr
    assert "run 20260103T000000Z-3 set aside" in one_line(added)
    assert archive.run_ids(store) == ["20260101T000000Z-1", "20260102T000000Z-2",
                                      "20260104T000000Z-4"]


def test_every_subcommand_on_a_broken_store_is_one_line_and_not_a_finding(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / archive.VERSION_FILE).write_text("not a number\n")
    out = tmp_path / "out"
    for command in (["runs"], ["history", POINT], ["trend"], ["publish", out],
                    ["store", "sql", "SELECT 1"], ["store", "check"], ["store", "rm", "x"],
                    ["compare", "a", "b", "--output", out],
                    ["store", "add", tmp_path, "--create"]):
        answer = duel(*command, "--store", store)
        assert answer.returncode in (2, 3), (command, answer.returncode, answer.stderr)
        assert answer.stderr.count("\n") == 1, (command, answer.stderr)
        one_line(answer)
    run = tmp_path / "run" / "results"  # a run folder whose summary was cut short
    run.mkdir(parents=True)
    (run / "summary.parquet").write_bytes(b"PAR1" + b"\0" * 40)
    for command in (["show", run.parent], ["compare", run.parent, run.parent, "--output", out]):
        answer = duel(*command)
        assert answer.returncode in (2, 3), (command, answer.returncode, answer.stderr)
        assert answer.stderr.count("\n") == 1 and "summary.parquet" in answer.stderr, (
            command, answer.stderr)
        one_line(answer)


def test_add_to_a_folder_that_is_not_a_store_is_refused_unless_asked_to_create_one(tmp_path):
    folder = results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1)
    mistyped = str(tmp_path / "stroe")
    answer = duel("store", "add", folder, "--store", mistyped)
    assert answer.returncode == 2 and "--create" in one_line(answer)
    assert not os.path.exists(mistyped)
    assert duel("store", "add", folder, "--store", mistyped, "--create").returncode == 0
    assert archive.run_ids(mistyped) == ["20260101T000000Z-1"]


def test_a_held_lock_is_waited_on_for_a_bounded_time_naming_its_holder(tmp_path, capfd):
    store = two_run_store(tmp_path)
    holder = hold_lock(store)
    try:
        started = time.time()
        with pytest.raises(archive.StoreError) as refused:
            with archive.writing(store, wait_s=2):
                pass
        assert 2 <= time.time() - started < 10
        assert "pid %d on " % holder.pid in str(refused.value) and "since 20" in str(refused.value)
        holder.send_signal(19)  # SIGSTOP: a stuck holder keeps it
        with pytest.raises(archive.StoreError):
            with archive.writing(store, wait_s=1):
                pass
    finally:
        holder.kill()
        holder.wait()
    # A holder that died freed it: the next writer takes it at once.
    started = time.time()
    with archive.writing(store, wait_s=2):
        pass
    assert time.time() - started < 2


def test_a_file_system_without_locks_is_named(tmp_path, monkeypatch):
    store = two_run_store(tmp_path)

    def no_locks(handle, operation):
        raise OSError(37, os.strerror(37))  # ENOLCK, as a file system without locks answers
    monkeypatch.setattr(fcntl, "flock", no_locks)
    with pytest.raises(archive.StoreError, match="does not lock files"):
        with archive.writing(store):
            pass


def test_a_removed_run_stays_removed_until_restored(tmp_path):
    store = str(tmp_path / "store")
    folder = results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1)
    ingest.add_folder(store, folder, create=True)
    assert duel("store", "rm", "20260101T000000Z-1", "--store", store).returncode == 0
    again = duel("store", "add", folder, "--store", store)
    assert again.returncode == 0 and archive.run_ids(store) == []
    assert "--restore 20260101T000000Z-1" in again.stderr
    restored = duel("store", "add", folder, "--store", store, "--restore", "20260101T000000Z-1")
    assert restored.returncode == 0 and archive.run_ids(store) == ["20260101T000000Z-1"]


def test_a_path_with_pattern_characters_is_read_as_a_path(tmp_path):
    store = two_run_store(tmp_path / "a[1]")
    listed = duel("runs", "--store", store, "--csv")
    assert listed.returncode == 0 and listed.stdout.count("2026010") == 2, listed.stderr
    history = duel("history", POINT, "--store", store, "--csv")
    assert history.returncode == 0 and history.stdout.count("2026010") == 2


def test_a_shard_belongs_to_the_run_whose_manifest_holds_its_hash_whatever_the_clocks(tmp_path):
    results = results_folder(tmp_path / "a", "20260101T000000Z-1", DAY % 1)
    later = os.path.join(results, "runs", "20260101T000000Z-1", "manifest.json")
    record = json.load(open(later))
    record["started_at"] = "2026-01-01T00:10:00+00:00"
    shards = [os.path.join(os.path.dirname(results), shard) for shard in record["shards"]]
    record["shard_sha256"] = dict((shard, files.file_sha256(path))
                                  for shard, path in zip(record["shards"], shards))
    with open(later, "w") as handle:
        json.dump(record, handle)
    early = time.mktime((2026, 1, 1, 0, 0, 0, 0, 0, 0))  # ten minutes before the run started
    for path in shards:
        os.utime(path, (early, early))
    owned = ingest.owners(results)
    assert list(owned) == ["20260101T000000Z-1"] and len(owned["20260101T000000Z-1"][1]) == 4


def test_run_ids_differ_between_hosts_started_in_the_same_second(monkeypatch):
    started = "2026-01-01T00:00:00+0000"
    monkeypatch.setattr(runs.platform, "node", lambda: "node-a.cluster")
    first = runs.new_run_id(started)
    monkeypatch.setattr(runs.platform, "node", lambda: "node_b")
    second = runs.new_run_id(started)
    assert first != second and first.startswith("20260101T000000Z-node-a-")
    assert second.startswith("20260101T000000Z-node-b-") and archive.RUN_ID.match(second)
