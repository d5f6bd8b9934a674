"""A real cell whose points count as disturbed: each runs again in a fresh process, every
attempt's row is kept, only the last counts, and each point's line reaches the progress
descriptor (scripts/cell/run_cell.py, duel/cell/attempts.py)."""
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import QUICK, REPO, TEST_MODELS

pytestmark = pytest.mark.framework


def test_disturbed_points_run_again_in_fresh_processes_and_every_attempt_is_kept(tmp_path):
    output = str(tmp_path / "cell.parquet")
    duel = QUICK["duel"]
    read, write = os.pipe()
    command = [sys.executable, os.path.join(REPO, "scripts", "cell", "run_cell.py"),
               "--framework", "pytorch", "--mode", "eager",
               "--model-config", os.path.join(TEST_MODELS, "tiny-bert-16pos.json"),
               "--batch-sizes", "1", "--sequence-lengths", "4,8", "--threads", "1",
               "--warmup-calls", str(duel["warmup_calls"]), "--min-samples", "3",
               "--min-time-s", "0", "--max-time-s", "5",
               # every canary is slower than a millionth of the fastest: all disturbed
               "--max-canary-ratio", "1e-6", "--attempts", "2",
               "--progress-fd", str(write), "--output", output]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as handle:
        progress = handle.read().splitlines()
    assert result.returncode == 0, result.stderr[-4000:]
    rows = pq.read_table(output).to_pylist()
    assert sorted((row["seq_len"], row["attempt"], row["counted"]) for row in rows) == [
        (4, 1, False), (4, 2, True), (8, 1, False), (8, 2, True)]
    for row in rows:
        # the canary's limit is what marks every point; the suite's other worker may add
        # "other processes" beside it
        reasons = row["disturbed"].split("; ")
        assert row["status"] == "ok" and any(reason.startswith("canary ") for reason in reasons)
        assert row["startup_s"] > 0 and row["job_wall_s"] >= row["startup_s"]
        assert row["steal_ms"] is not None and row["other_cpu_ms"] is not None
    assert "2 disturbed point(s) run again in a fresh process (attempt 2)" in result.stderr
    assert [line.split(":")[0] for line in progress] == [
        "tiny-bert-16pos pytorch eager 1x4 duel r1", "tiny-bert-16pos pytorch eager 1x8 duel r1",
        "tiny-bert-16pos pytorch eager 1x4 duel r1 attempt 2",
        "tiny-bert-16pos pytorch eager 1x8 duel r1 attempt 2"]
