"""A measuring process killed or stopped mid-sweep loses nothing it measured: its finished points
stay, the point it was running becomes a row (killed, oom, timeout) and a fresh process measures
the rest (duel/cell/journal.py, duel/cell/commands/run_cell.py)."""
import json
import os
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from conftest import QUICK, TEST_MODELS, cell_command
from duel.cell import contract, journal

LENGTHS = [2, 4, 6, 8, 16]


def start_cell(tmp_path, *extra, mode="eager", lengths=LENGTHS):
    """The cell (tiny BERT, PyTorch ``mode``, a point per length and mode), started; (process,
    shard path)."""
    output = str(tmp_path / "cell.parquet")
    command = [*cell_command("run_cell"),
               "--framework", "pytorch", "--mode", mode,
               "--model-config", os.path.join(TEST_MODELS, "tiny-bert-16pos.json"),
               "--batch-sizes", "1", "--sequence-lengths", ",".join(map(str, lengths)),
               "--threads", "1", "--warmup-calls", str(QUICK["duel"]["warmup_calls"]),
               "--min-samples", "5", "--min-time-s", "0.5", "--max-time-s", "5",
               "--remeasures", "0", "--attempts", "1", "--output", output] + list(extra)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, output


def measuring_third_point(output, process, timeout=300):
    """The first measuring process's pid, once it has two points' rows and has begun the third."""
    path = journal.path_of(output + ".attempt-1")
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert process.poll() is None, process.communicate()
        record = journal.read(path)
        if len(record.rows) == 2 and len(record.begun) == 3:
            return record.pid
        time.sleep(0.02)
    raise AssertionError("the cell never began its third point")


def counted_rows(output):
    rows = [row for row in pq.read_table(output).to_pylist() if row["counted"]]
    return sorted(rows, key=lambda row: row["seq_len"])


@pytest.mark.framework
def test_a_measuring_process_killed_mid_sweep_keeps_its_points_and_the_rest_run_fresh(tmp_path):
    process, output = start_cell(tmp_path)
    os.kill(measuring_third_point(output, process), signal.SIGKILL)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    rows = counted_rows(output)
    assert [row["seq_len"] for row in rows] == LENGTHS
    assert [row["status"] for row in rows] == ["ok", "ok", "killed", "ok", "ok"], rows
    assert [row["attempt"] for row in rows] == [1, 1, 1, 2, 2]
    assert "SIGKILL" in rows[2]["message"] and rows[2]["hostname"] == rows[0]["hostname"]
    assert rows[0]["samples"] and rows[3]["samples"]  # the samples came through the journal
    assert "killed by SIGKILL" in stderr and "2 point(s) left" in stderr
    assert not [name for name in os.listdir(str(tmp_path)) if "attempt" in name]


@pytest.mark.framework
def test_a_process_of_two_modes_killed_mid_sweep_keeps_each_modes_points(tmp_path):
    """Two modes in one process, one after the other (eager first): the kill loses only the
    point it hit, and a fresh process measures the rest of both modes."""
    process, output = start_cell(tmp_path, mode="eager+torchscript", lengths=[2, 4, 8])
    os.kill(measuring_third_point(output, process), signal.SIGKILL)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    rows = pq.read_table(output).to_pylist()
    assert [(row["seq_len"], row["mode"], row["status"], row["attempt"]) for row in rows] == [
        (2, "eager", "ok", 1), (4, "eager", "ok", 1), (8, "eager", "killed", 1),
        (2, "torchscript", "ok", 2), (4, "torchscript", "ok", 2), (8, "torchscript", "ok", 2)]
    assert all(row["counted"] and row["process_modes"] == "eager+torchscript" for row in rows)
    assert "3 point(s) left" in stderr
    digests = set((row["mode"], row["config_sha256"]) for row in rows)
    assert len(digests) == 2 and len(set(digest for _, digest in digests)) == 2


@pytest.mark.framework
def test_a_point_that_hangs_is_stopped_at_its_time_limit_and_the_rest_run(tmp_path):
    # Limit: a tenth of the plan's estimate of a point (about 7 s here); a point takes about 1 s.
    process, output = start_cell(tmp_path, "--point-time-limit", "0.1")
    pid = measuring_third_point(output, process)
    stopped = time.time()
    os.kill(pid, signal.SIGSTOP)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    rows = counted_rows(output)
    assert [row["status"] for row in rows] == ["ok", "ok", "timeout", "ok", "ok"], rows
    assert "past the point's time limit" in rows[2]["message"]
    limit = float(rows[2]["message"].split("time limit of ")[1].split(" s")[0])
    assert 3 < limit < 30 and time.time() - stopped > limit - 1


@pytest.mark.unit
def test_a_journal_cut_mid_line_reads_up_to_its_last_whole_line(tmp_path):
    path = str(tmp_path / "cell.journal")
    record = journal.Journal(path, [(1, 8, "duel"), (1, 16, "duel")], {"hostname": "h"},
                             limit_of=lambda point: 12.0)
    record.begin((1, 8, "duel"))
    record.row(dict(contract.empty_row(), batch_size=1, seq_len=8, method="duel", status="ok"))
    record.begin((1, 16, "duel"))
    record.close()
    with open(path, "a") as handle:
        handle.write(json.dumps({"row": {"batch_size": 1}})[:9])  # the kill, mid-write
    read = journal.read(path)
    assert read.pid == os.getpid() and len(read.rows) == 1
    assert journal.running(read)[0] == (1, 16, "duel") and journal.running(read)[2] == 12.0
    assert journal.Follower(path).running() == journal.running(read)
    assert journal.left(read) == []
    lost = journal.lost_row(read, (1, 16, "duel"), -9, out_of_memory=True)
    assert lost["status"] == "oom" and "OOM killer" in lost["message"]
    assert lost["hostname"] == "h" and lost["status"] in contract.FAILED
    assert journal.lost_row(read, (1, 16, "duel"), -9)["status"] == "killed"


@pytest.mark.unit
def test_the_oom_killer_is_read_from_the_cgroup_of_the_process(tmp_path):
    (tmp_path / "cgroup").write_text("0::/jobs/cell\n")
    events = tmp_path / "fs" / "jobs" / "cell"
    events.mkdir(parents=True)
    (events / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n")
    assert journal.oom_kills(str(tmp_path / "cgroup"), str(tmp_path / "fs")) == 2
    assert journal.oom_kills(str(tmp_path / "none"), str(tmp_path / "fs")) is None
    # cgroup v1 (many clusters, and these VMs): the memory controller's own hierarchy, where
    # v2's file at the unified root is missing.
    (tmp_path / "cgroup").write_text("4:memory:/jobs/v1\n0::/\n")
    v1 = tmp_path / "fs" / "memory" / "jobs" / "v1"
    v1.mkdir(parents=True)
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    assert journal.oom_kills(str(tmp_path / "cgroup"), str(tmp_path / "fs")) == 5


def memory_cgroup(name):
    """A fresh memory cgroup under this process's own (v1's memory controller, or v2 where its
    memory controller is enabled): (folder, file that sets its limit); skips where this machine
    lets none be made (no root, no controller)."""
    with open("/proc/self/cgroup") as handle:
        lines = [line.strip().split(":", 2) for line in handle]
    for hierarchy, controllers, path in lines:
        if "memory" in controllers.split(","):
            parent, limit = os.path.join("/sys/fs/cgroup/memory", path.lstrip("/")), \
                "memory.limit_in_bytes"
            break
    else:
        path = [path for hierarchy, _, path in lines if hierarchy == "0"][0]
        parent, limit = os.path.join("/sys/fs/cgroup", path.lstrip("/")), "memory.max"
        controllers = os.path.join(parent, "cgroup.controllers")
        if not os.path.exists(controllers) or "memory" not in open(controllers).read().split():
            pytest.skip("no memory cgroup controller here")
    folder = os.path.join(parent, name)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        pytest.skip("cannot make a memory cgroup here: %s" % error)
    return folder, os.path.join(folder, limit)


def run_in_cgroup(folder, command):
    def enter():
        with open(os.path.join(folder, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    return subprocess.run(command, preexec_fn=enter, capture_output=True, text=True,
                          timeout=600)


def peak_bytes(folder):
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        if os.path.exists(os.path.join(folder, name)):
            return int(open(os.path.join(folder, name)).read())
    pytest.skip("this memory cgroup does not report its peak")


@pytest.mark.framework
def test_a_point_the_kernel_kills_for_memory_becomes_an_oom_row_and_the_rest_stand(tmp_path):
    """A real OOM kill: the cell runs in a memory cgroup whose limit its small point fits and its
    large point does not (the limit from the small point's own peak there, so any host's
    start-up size is allowed for)."""
    folder, limit = memory_cgroup("duel-test-oom-%d" % os.getpid())
    try:
        def cell(batch_sizes, output):
            return [*cell_command("run_cell"), "--framework", "pytorch", "--mode", "eager",
                    "--model-config", os.path.join(TEST_MODELS, "tiny-bert-16pos.json"),
                    "--batch-sizes", batch_sizes, "--sequence-lengths", "16", "--threads", "1",
                    "--warmup-calls", "1", "--min-samples", "2", "--min-time-s", "0.1",
                    "--max-time-s", "2", "--remeasures", "0", "--attempts", "1",
                    "--output", str(tmp_path / output)]
        small = run_in_cgroup(folder, cell("1", "small.parquet"))
        assert small.returncode == 0, small.stderr[-3000:]
        with open(limit, "w") as handle:  # the large point needs about 240 MB more
            handle.write(str(peak_bytes(folder) + 100 * 2 ** 20))
        answer = run_in_cgroup(folder, cell("1,16384", "cell.parquet"))
        assert answer.returncode == 0, answer.stderr[-3000:]
        rows = [row for row in pq.read_table(str(tmp_path / "cell.parquet")).to_pylist()
                if row["counted"]]
        assert [(row["batch_size"], row["status"]) for row in rows] == [(1, "ok"), (16384, "oom")]
        assert "OOM killer" in rows[1]["message"]
    finally:
        os.rmdir(folder)


@pytest.mark.unit
def test_a_fresh_process_gets_the_points_left_each_with_its_mode():
    from duel.cell.commands import run_cell

    assert run_cell.point_list("1x8:duel,function:2x64:timeit") == {
        (1, 8, "duel", None), (2, 64, "timeit", "function")}
    command = run_cell.attempt_command(
        ["--mode", "eager+function", "--points", "1x8:duel", "--output", "x"], 2,
        {(2, 64, "duel", "function"), (1, 8, "duel", "eager")}, "y")
    assert command[-6:] == ["--attempt", "2", "--output", "y", "--points",
                            "eager:1x8:duel,function:2x64:duel"]
