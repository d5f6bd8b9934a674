"""Models outside the 2019 families, run for real in the current era: ALBERT and ELECTRA from
their architecture files, and a folder save_pretrained wrote, each built in both frameworks on
one set of weights (the reference job's) and timed on a tiny point."""
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import MODELS, cell_command
from duel.cell import flops, models, sweep
from duel.host.plan import model_files

pytestmark = pytest.mark.framework

SHIPPED = ("albert-base-v2", "electra-small-discriminator")
# A tiny seeded BERT saved as a model folder, and its final hidden state on the ids given (its
# own process: the test's stays free of the frameworks' thread pools, as the cells' are).
SAVE_FOLDER = r"""
import json, sys, numpy, torch, transformers
torch.manual_seed(7)
config = transformers.BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=64,
                                 max_position_embeddings=64)
model = transformers.BertModel(config).eval()
model.save_pretrained(sys.argv[1])
with torch.no_grad():
    hidden = model(torch.tensor(json.loads(sys.argv[3])))[0][0].numpy()
numpy.save(sys.argv[2], hidden)
"""


def run_script(name, *args):
    result = subprocess.run([*cell_command(name), *args],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def shrunk(models_dir, name):
    """The shipped architecture with one layer and a small vocabulary: the same kind of model,
    built and converted in seconds."""
    with open(os.path.join(MODELS, name + ".json")) as handle:
        document = json.load(handle)
    document["architecture"].update(num_hidden_layers=1, vocab_size=1000)
    path = os.path.join(models_dir, name + ".json")
    with open(path, "w") as handle:
        json.dump(document, handle)
    return path


def timed_row(tmp_path, model_config, reference, framework, mode):
    """A point of 1 x 8 tokens, on the reference's weights (None: the model's own)."""
    output = str(tmp_path / ("%s-%s-%s.parquet" % (framework, mode, bool(reference))))
    run_script("run_cell", "--framework", framework, "--mode", mode, "--model-config",
               model_config, "--batch-sizes", "1", "--sequence-lengths", "8", "--min-time-s",
               "0.02", "--output", output, *(["--reference-dir", reference] if reference else []))
    (row,) = pq.read_table(output).to_pylist()
    return row


def run_both_frameworks(tmp_path, model_config):
    """The model's reference (PyTorch's seeded weights, converted to TensorFlow), then a point
    of PyTorch eager and of TensorFlow function on those weights: their rows."""
    reference = str(tmp_path / "reference")
    run_script("make_reference", "--model-config", model_config, "--sequence-lengths", "8",
               "--output-dir", reference)
    assert json.load(open(os.path.join(reference, "reference.json")))["lengths"] == [8]
    return reference, [timed_row(tmp_path, model_config, reference, framework, mode)
                       for framework, mode in (("pytorch", "eager"), ("tensorflow", "function"))]


@pytest.mark.parametrize("name", SHIPPED)
def test_albert_and_electra_run_in_both_frameworks_on_one_set_of_weights(tmp_path, name):
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    path = shrunk(str(models_dir), name)
    spec = model_files.check_models([name], str(models_dir))[name]
    _, rows = run_both_frameworks(tmp_path, path)
    for row in rows:
        assert row["status"] == "ok", row["message"]
        assert row["median"] > 0 and row["max_abs_diff"] < 1e-4 < row["diff_tolerance"]
        assert row["flops"] == flops.forward_flops(spec, 1, 8) > 0


def test_a_save_pretrained_folder_is_a_model_loaded_in_both_frameworks(tmp_path):
    """Its own weights, not seeded ones: PyTorch eager's reference output is the saved model's,
    and TensorFlow (loaded from the PyTorch weights) agrees with it."""
    models_dir = tmp_path / "models"
    folder, expected = str(models_dir / "tiny-saved"), str(tmp_path / "expected.npy")
    ids = sweep.token_ids(models.ModelSpec("tiny-saved", "bert", None, {"vocab_size": 500}),
                          1, 8, 0)  # the reference's input: seed 0, length 8
    subprocess.run([sys.executable, "-c", SAVE_FOLDER, folder, expected,
                    json.dumps(ids.tolist())], check=True, timeout=600)
    spec = model_files.check_models(["tiny-saved"], str(models_dir))["tiny-saved"]
    assert (spec.family, spec.weights, spec.max_sequence_length) == ("bert", folder, 64)
    assert model_files.model_config_path(str(models_dir), "tiny-saved") == folder
    reference, rows = run_both_frameworks(tmp_path, folder)
    assert np.abs(np.load(os.path.join(reference, "length-8.npy")) -
                  np.load(expected)).max() < 1e-6
    for row in rows:
        assert row["status"] == "ok", row["message"]
        assert row["model"] == "tiny-saved" and row["max_abs_diff"] < 1e-5
    # without a reference, TensorFlow loads the folder's PyTorch weights itself (from_pt)
    row = timed_row(tmp_path, folder, None, "tensorflow", "eager")
    assert row["status"] == "ok", row["message"]
