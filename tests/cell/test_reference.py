"""One set of weights for both frameworks, and the output check that fails a point loudly."""
import json
import os
import shutil
import subprocess

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import TEST_MODELS, cell_command

pytestmark = pytest.mark.framework

TINY = os.path.join(TEST_MODELS, "tiny-bert-16pos.json")


def run_script(name, *args):
    result = subprocess.run([*cell_command(name), *args],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("reference") / "tiny")
    run_script("make_reference", "--model-config", TINY, "--sequence-lengths", "8,32",
               "--output-dir", folder)
    return folder


def run_cell(tmp_path, reference_dir, framework, mode, precision="fp32"):
    output = str(tmp_path / ("%s-%s-%s.parquet" % (framework, mode, precision)))
    run_script("run_cell", "--framework", framework, "--mode", mode, "--model-config", TINY,
               "--precision", precision, "--batch-sizes", "2", "--sequence-lengths", "8",
               "--min-time-s", "0.02", "--reference-dir", reference_dir, "--output", output)
    (row,) = pq.read_table(output).to_pylist()
    return row


def test_reference_holds_both_frameworks_weights_and_pytorch_outputs(reference):
    manifest = json.load(open(os.path.join(reference, "reference.json")))
    assert manifest["lengths"] == [8]  # 32 does not fit the 16 position embeddings
    assert "32" in manifest["failed"]
    assert os.listdir(os.path.join(reference, "pytorch")) and \
        os.listdir(os.path.join(reference, "tensorflow"))
    assert np.load(os.path.join(reference, "length-8.npy")).shape == (8, 32)


@pytest.mark.parametrize("framework, mode", [("tensorflow", "eager"), ("tensorflow", "function"),
                                             ("pytorch", "torchscript")])
def test_every_framework_computes_the_same_thing_on_the_shared_weights(tmp_path, reference,
                                                                       framework, mode):
    row = run_cell(tmp_path, reference, framework, mode)
    assert row["status"] == "ok", row["message"]
    assert row["max_abs_diff"] < 1e-5 < row["diff_tolerance"]


@pytest.mark.parametrize("framework, mode, precision", [("pytorch", "eager", "bf16"),
                                                        ("pytorch", "torchscript", "fp16"),
                                                        ("tensorflow", "function", "fp16")])
def test_mixed_precision_really_runs_and_stays_within_its_tolerance(tmp_path, reference,
                                                                     framework, mode, precision):
    row = run_cell(tmp_path, reference, framework, mode, precision)
    assert row["status"] == "ok", row["message"]
    assert row["precision"] == precision
    # beyond fp32's agreement (< 1e-5 above, so the low precision really ran), within its own
    # tolerance; this tiny model (hidden size 32) differs by about 2e-5 in fp16, 2e-3 in bf16
    assert 1e-5 < row["max_abs_diff"] < row["diff_tolerance"]


def test_a_different_output_fails_the_point_loudly_and_keeps_its_times(tmp_path, reference):
    tampered = str(tmp_path / "tampered")
    shutil.copytree(reference, tampered)
    path = os.path.join(tampered, "length-8.npy")
    np.save(path, np.load(path) + 0.5)
    row = run_cell(tmp_path, tampered, "tensorflow", "eager")
    assert row["status"] == "error"
    assert "differs from PyTorch eager" in row["message"]
    assert row["max_abs_diff"] == pytest.approx(0.5, abs=1e-4)
    assert row["median"] > 0 and row["samples"]  # nothing measured is lost
