"""A real cell beside a neighbour pinned to one of its cores: its points are flagged, measured
again in the same process, then in a fresh process while the run's budget lasts; every row is
kept and only each point's last counts. The same cell with nothing beside it is not flagged.
Both judge the machine's own noise, so they run alone (tests/conftest.py)."""
import os
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from conftest import QUICK, TEST_MODELS, cell_command
from duel.cell import attempts

pytestmark = [pytest.mark.framework, pytest.mark.alone]


def run_cell(tmp_path, *extra):
    """The cell (tiny BERT, PyTorch eager, both CPUs); (its rows, stderr, progress lines)."""
    output = str(tmp_path / "cell.parquet")
    read, write = os.pipe()
    command = [*cell_command("run_cell"),
               "--framework", "pytorch", "--mode", "eager",
               "--model-config", os.path.join(TEST_MODELS, "tiny-bert-16pos.json"),
               "--batch-sizes", "1", "--sequence-lengths", "4,8", "--threads", "2",
               "--warmup-calls", str(QUICK["duel"]["warmup_calls"]), "--min-samples", "5",
               "--min-time-s", "0.3", "--max-time-s", "5",
               "--progress-fd", str(write), "--output", output] + list(extra)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as handle:
        progress = handle.read().splitlines()
    assert result.returncode == 0, result.stderr[-4000:]
    return pq.read_table(output).to_pylist(), result.stderr, progress


def neighbour_on(cpu):
    """A busy loop pinned to ``cpu``, until killed."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(process.pid, [cpu])
    time.sleep(0.2)
    return process


def beside_a_neighbour(tmp_path, *extra):
    """run_cell with a busy loop on the last CPU, one measurement again in the process and a
    budget of one fresh process for the run."""
    budget = str(tmp_path / "retries")
    attempts.write_budget(budget, 1)
    neighbour = neighbour_on(max(os.sched_getaffinity(0)))
    try:
        return run_cell(tmp_path, "--remeasures", "1", "--attempts", "3", "--fresh-processes",
                        budget, *extra)
    finally:
        neighbour.kill()
        neighbour.wait()


def test_points_beside_a_neighbour_are_measured_again_then_in_a_fresh_process(tmp_path):
    """Points whose samples are not judged one by one (the timeit method) are measured again
    whole for any disturbance."""
    rows, stderr, progress = beside_a_neighbour(tmp_path, "--methods", "timeit")
    # per point: measured, again in its process, then in the one fresh process the budget had
    assert sorted((row["seq_len"], row["attempt"], row["remeasure"], row["counted"])
                  for row in rows) == [
        (4, 1, 0, False), (4, 1, 1, False), (4, 2, 0, False), (4, 2, 1, True),
        (8, 1, 0, False), (8, 1, 1, False), (8, 2, 0, False), (8, 2, 1, True)]
    for row in rows:
        assert row["status"] == "ok" and "other processes" in row["disturbed"]
        assert row["disturbance_rule"] == "canary-score" and row["other_cpu_ms"] > 0
    assert "2 disturbed point(s) run again in a fresh process (attempt 2)" in stderr
    assert "2 point(s) still disturbed; the run's fresh processes for disturbed points are " \
           "spent" in stderr
    assert [line.split(":")[0] for line in progress] == [
        "tiny-bert-16pos pytorch eager 1x4 timeit r1",
        "tiny-bert-16pos pytorch eager 1x4 timeit r1 again 1",
        "tiny-bert-16pos pytorch eager 1x8 timeit r1",
        "tiny-bert-16pos pytorch eager 1x8 timeit r1 again 1",
        "tiny-bert-16pos pytorch eager 1x4 timeit r1 attempt 2",
        "tiny-bert-16pos pytorch eager 1x4 timeit r1 attempt 2 again 1",
        "tiny-bert-16pos pytorch eager 1x8 timeit r1 attempt 2",
        "tiny-bert-16pos pytorch eager 1x8 timeit r1 attempt 2 again 1"]
    assert all("other processes" in line.partition(", disturbed: ")[2] for line in progress)


def test_duel_points_beside_a_neighbour_are_marked_not_measured_again(tmp_path):
    """The duel method judges every sample: a neighbour is marked in the point's row, and the
    point is measured again only where its canary says the process itself ran slow (here
    switched off, so never)."""
    rows, stderr, progress = beside_a_neighbour(tmp_path, "--max-canary-score", "0")
    assert sorted((row["seq_len"], row["attempt"], row["remeasure"], row["counted"])
                  for row in rows) == [(4, 1, 0, True), (8, 1, 0, True)]
    for row in rows:
        assert row["status"] == "ok" and "other processes" in row["disturbed"]
        assert row["kept_other_cpu_ms"] > 0 and row["n_samples"] >= row["planned_samples"]
    assert "fresh process" not in stderr
    assert len(progress) == 2


def test_the_same_cell_with_nothing_beside_it_is_not_flagged(tmp_path):
    rows, stderr, _ = run_cell(tmp_path, "--remeasures", "2", "--attempts", "2")
    counted = [row for row in rows if row["counted"]]
    assert sorted(row["seq_len"] for row in counted) == [4, 8]
    assert not any(row["disturbed"] for row in counted), [row["disturbed"] for row in rows]
    assert all(len(row["canary_calibration_ms"]) == 15 for row in rows)
    assert all(row["canary_score"] is not None for row in rows)
    assert "fresh process" not in stderr
