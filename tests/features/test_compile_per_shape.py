"""torch.compile measures the same kind of graph at every point: a static graph compiled in the
point's first call, however many shapes the cell sweeps; calls that ran eagerly are an error."""
import os

import pytest
import subprocess

import pyarrow.parquet as pq

from conftest import QUICK, TEST_MODELS, cell_command

pytestmark = pytest.mark.framework

TINY = os.path.join(TEST_MODELS, "tiny-bert-16pos.json")


def run_compile_cell(tmp_path, batch_sizes, lengths, env=None):
    output = str(tmp_path / "compile.parquet")
    duel = QUICK["duel"]
    command = [*cell_command("run_cell"),
               "--framework", "pytorch", "--mode", "compile", "--model-config", TINY,
               "--batch-sizes", batch_sizes, "--sequence-lengths", lengths, "--threads", "1",
               "--warmup-calls", str(duel["warmup_calls"]),
               "--min-samples", str(duel["min_samples"]), "--min-time-s", "0",
               "--max-time-s", str(duel["max_time_s"]), "--output", output]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                            env=dict(os.environ, **(env or {})))
    assert result.returncode == 0, result.stderr[-4000:]
    return pq.read_table(output).to_pylist()


def test_every_point_of_ten_shapes_runs_its_own_compiled_graph(tmp_path):
    # 10 shapes: past Dynamo's recompile limit (8) for one compiled module
    rows = run_compile_cell(tmp_path, "1,2", "2,4,8,12,16")
    assert len(rows) == 10
    for row in rows:
        point = (row["batch_size"], row["seq_len"], row["message"])
        assert row["status"] == "ok", point
        assert row["compiles"] == 1 and row["recompiles"] == 0, point
        assert row["graph_breaks"] == 0, point
        assert row["tf32"] == "n/a", point  # a CPU cell


def test_calls_that_ran_eagerly_are_an_error_not_a_compile_timing(tmp_path):
    rows = run_compile_cell(tmp_path, "1", "8", env={"TORCH_COMPILE_DISABLE": "1"})
    assert [row["status"] for row in rows] == ["error"]
    assert rows[0]["compiles"] == 0 and "ran eagerly" in rows[0]["message"]
    assert rows[0]["median"] is not None  # the times stay in the row
