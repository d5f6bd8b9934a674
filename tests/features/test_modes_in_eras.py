"""Eager vs graph modes in both eras: TorchScript, torch.compile, XLA, and what each era lacks."""
import os
import subprocess

import pyarrow.parquet as pq
import pytest

from conftest import MODELS, QUICK, REPO, cell_command, snakemake, write_config
from duel.cell import locks


@pytest.mark.workflow
@pytest.mark.era
def test_graph_modes_and_precisions_run_or_skip_with_their_reason_in_each_era(tmp_path,
                                                                            models_dir):
    config = write_config(tmp_path, models_dir=models_dir, eras=["hf2019", "current"],
                          models=["tiny-bert-16pos"], batch_sizes=[1], sequence_lengths=[8],
                          modes={"pytorch": ["torchscript", "compile"],
                                 "tensorflow": ["xla"]},
                          precisions=["fp32", "bf16"], method="duel", **QUICK)
    snakemake(tmp_path, "--cores", "all", "--configfile", config)
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    low = {(r["era"], r["mode"]): r for r in rows if r["precision"] == "bf16"}
    by = {(r["era"], r["mode"]): r for r in rows if r["precision"] == "fp32"}
    assert len(by) == 6 and len(low) == 6
    ran = [row for row in rows if row["python"]]  # not the merge's rows of what an era lacks
    for row in ran:  # the software as installed, recorded in both eras (duel/cell/locks.py)
        lock = {"current": "envs/current-cpu.txt", "hf2019": "envs/hf2019.txt"}[row["era"]]
        assert row["lock_file"] == lock and len(row["installed_sha256"]) == 64
        assert row["lock_sha256"] == locks.lock_sha256(os.path.join(REPO, lock))
        assert row["lock_match"] == (row["lock_drift"] == "") and row["drift_accepted"] is False
    assert {row["lock_match"] for row in ran if row["era"] == "hf2019"} == {True}  # built exactly
    for era, mode in (("current", "torchscript"), ("current", "compile"), ("current", "xla"),
                      ("hf2019", "torchscript")):
        row = by[(era, mode)]
        assert row["status"] == "ok", row["message"]
        assert row["setup_s"] >= 0 and row["first_call_ms"] > 0
        assert row["first_call_ms"] not in row["samples"]
    assert by[("current", "torchscript")]["setup_s"] > 0.01  # the trace itself
    # compiling happens in the first call of a shape: far slower than any sample
    compiled = by[("current", "compile")]
    assert compiled["first_call_ms"] > 20 * compiled["median"]
    # What the era lacks (envs/eras.yaml) ran in no process: the merge's skipped rows say why.
    assert by[("hf2019", "compile")]["status"] == "skipped"
    assert "era hf2019 lacks pytorch compile: torch.compile came with torch 2.0" in \
        by[("hf2019", "compile")]["message"]
    assert by[("hf2019", "xla")]["status"] == "skipped"
    assert "auto-clustering, for GPUs" in by[("hf2019", "xla")]["message"]
    # bf16 runs in today's stack in every mode, within its tolerance; 2019's had no bf16
    for mode in ("torchscript", "compile", "xla"):
        row = low[("current", mode)]
        assert row["status"] == "ok", row["message"]
        assert 1e-4 < row["max_abs_diff"] < row["diff_tolerance"]
    assert "torch 1.3.0 has no autocast" in low[("hf2019", "torchscript")]["message"]
    assert "auto-clustering, for GPUs" in low[("hf2019", "xla")]["message"]


@pytest.mark.framework
def test_transfo_xl_is_not_traced_and_not_even_built(tmp_path):
    output = str(tmp_path / "shard.parquet")
    result = subprocess.run(
        [*cell_command("run_cell"), "--framework", "pytorch",
         "--mode", "torchscript", "--model-config", os.path.join(MODELS, "transfo-xl-wt103.json"),
         "--batch-sizes", "1,2", "--sequence-lengths", "8", "--output", output],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = pq.read_table(output).to_pylist()
    assert [r["status"] for r in rows] == ["skipped", "skipped"]
    assert "cannot be traced" in rows[0]["message"]
    assert all(r["peak_host_rss_mb"] is None for r in rows)
