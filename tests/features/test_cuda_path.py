"""The CUDA path, as far as a machine without a GPU can check it, without pretending to run it.

What runs here for real: a cuda cell started on this machine fails loudly in both frameworks
(every point an ``error`` row that says no GPU was seen, the shard still written), instead of
quietly timing the CPU. The nominal peaks of known GPUs are held by test_peaks, the device
barrier's place in the clock reads by test_timing (a recording barrier); the GPU runs themselves
are the device check in benchmarks/gpu_check.sh, run where a GPU is lent.
"""
import os
import subprocess

import pyarrow.parquet as pq
import pytest

from conftest import TEST_MODELS, cell_command, snakemake

TINY = os.path.join(TEST_MODELS, "tiny-bert-16pos.json")


@pytest.mark.framework
@pytest.mark.parametrize("framework, words", [("pytorch", "sees no CUDA device"),
                                              ("tensorflow", "sees no GPU")])
def test_a_cuda_cell_without_a_gpu_fails_every_point_loudly(tmp_path, framework, words):
    output = str(tmp_path / "cuda.parquet")
    result = subprocess.run(
        [*cell_command("run_cell"), "--framework", framework,
         "--device", "cuda", "--model-config", TINY, "--batch-sizes", "1,2",
         "--sequence-lengths", "8", "--output", output],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = pq.read_table(output).to_pylist()
    assert [row["status"] for row in rows] == ["error", "error"]
    assert all(words in row["message"] and row["device"] == "cuda" for row in rows)
    assert all(row["samples"] is None and row["device_name"] is None for row in rows)


@pytest.mark.workflow
def test_a_real_run_with_cuda_cells_is_refused_before_any_job_here(tmp_path):
    result = snakemake(tmp_path, "--cores", "1", "--config", "devices=[cuda]", "models=[gpt2]",
                       "era_envs_dir=" + str(tmp_path / "envs"), check=False)
    assert result.returncode != 0
    assert "device 'cuda' cannot run here: this machine has no NVIDIA GPU" in result.stderr
    assert not os.path.exists(str(tmp_path / "results"))
    assert not os.path.exists(str(tmp_path / "envs"))  # not even the CUDA stack's build
