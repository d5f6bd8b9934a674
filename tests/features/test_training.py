"""Task training: one optimiser step per call, in both frameworks and both eras, and the check
that the loss really falls."""
import os
import subprocess

import openpyxl
import pyarrow.parquet as pq
import pytest

from conftest import QUICK, TEST_MODELS, cell_command, snakemake, write_config

TINY = os.path.join(TEST_MODELS, "tiny-bert-16pos.json")


@pytest.mark.workflow
@pytest.mark.era
def test_training_cells_in_both_frameworks_and_eras(tmp_path, models_dir):
    config = write_config(tmp_path, models_dir=models_dir, eras=["hf2019", "current"],
                          models=["tiny-bert-16pos"], tasks=["training"],
                          training={"batch_sizes": [2], "sequence_lengths": [8, 32]},
                          modes={"pytorch": ["eager"], "tensorflow": ["function"]},
                          method="duel", **QUICK)
    snakemake(tmp_path, "--cores", "1", "--configfile", config)
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    assert {(r["era"], r["framework"]) for r in rows} == {
        (era, framework) for era in ("hf2019", "current") for framework in ("pytorch", "tensorflow")}
    assert {r["task"] for r in rows} == {"training"}
    for row in rows:
        if row["seq_len"] == 32:  # beyond the tiny model's 16 positions: a failed step, a row
            assert row["status"] == "error" and row["loss_end"] is None
            continue
        assert row["status"] == "ok", (row["era"], row["framework"], row["message"])
        assert row["loss_end"] < row["loss_start"]
        assert row["train_steps"] >= row["n_samples"] + row["warmup_calls"]
        assert row["learning_rate"] == 1e-4 and row["peak_host_rss_mb"] > 0
        assert row["flops"] > 0 and row["achieved_gflops"] > 0
    # in an era every point starts from the same weights: the same loss before training in
    # both frameworks (each era seeds its own torch, so the eras' weights differ)
    for era in ("hf2019", "current"):
        starts = [r["loss_start"] for r in rows if r["status"] == "ok" and r["era"] == era]
        assert len(starts) == 2 and abs(starts[0] - starts[1]) < 1e-4 * starts[0]
    workbook = openpyxl.load_workbook(os.path.join(str(tmp_path), "results", "summary.xlsx"))
    assert "current cpu PT eager train duel" in workbook.sheetnames
    layout = [list(r) for r in workbook["current cpu PT eager train duel"].iter_rows(
        values_only=True)]
    assert "seconds per training step" in layout[1][0]
    assert ["peak host memory of the point (RSS), MiB"] == [
        row for row in layout if row[0] and "peak host memory" in row[0]][0][:1]
    ratios = [list(r) for r in workbook["ratio PT-TF"].iter_rows(values_only=True)]
    assert any(row[0] and "training" in row[0] for row in ratios)


@pytest.fixture(scope="module")
def training_weights(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("weights") / "tiny")
    result = subprocess.run([*cell_command("make_reference"),
                             "--model-config", TINY, "--training-weights", "--output-dir",
                             folder], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@pytest.mark.framework
@pytest.mark.parametrize("framework", ["pytorch", "tensorflow"])
def test_a_broken_optimiser_fails_the_loss_check(tmp_path, training_weights, framework):
    output = str(tmp_path / "broken.parquet")
    result = subprocess.run(
        [*cell_command("run_cell"), "--framework", framework,
         "--task", "training", "--model-config", TINY, "--batch-sizes", "2",
         "--sequence-lengths", "8", "--min-time-s", "0.02", "--learning-rate", "0",
         "--reference-dir", training_weights, "--output", output],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (row,) = pq.read_table(output).to_pylist()
    assert row["status"] == "error"
    assert row["message"].startswith("loss did not fall")
    assert row["loss_end"] == pytest.approx(row["loss_start"], rel=1e-6)
    assert row["median"] > 0 and row["samples"]  # the times are kept
