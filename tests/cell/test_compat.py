"""The compatibility module, run for real in each era's own environment.

The hf2019 environment is the one the workflow builds (the checkout's .era-envs/), built here
first if no run has built it yet.
"""
import json
import os
import subprocess

import pyarrow.parquet as pq
import pytest

from conftest import PACKAGE_PATH, REPO, era_python

PROBE = r"""
import glob, json, os, sys
os.environ["USE_TF"] = "0"
from duel.cell import compat, models
import torch
report = {"transformers": compat.transformers_version(), "legacy": compat.is_legacy(),
          "vocab": {}, "missing": {}}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    spec = models.load_model_spec(path)
    missing = models.missing(spec, "pytorch", "inference")
    if missing:
        report["missing"][spec.name] = missing
        continue
    config = compat.build_config(spec.family, spec.architecture)
    report["vocab"][spec.name] = config.vocab_size
spec = models.load_model_spec(os.path.join(sys.argv[2], "tiny-bert-16pos.json"))
model = models.build_pytorch(spec, "inference", 0).eval()
with torch.no_grad():
    outputs = model(torch.ones((2, 5), dtype=torch.long))
report["outputs_are_tuple"] = isinstance(outputs, tuple)
report["hidden_shape"] = list(compat.last_hidden_state(outputs).shape)
# A tiny GPT-2 traced as the torchscript mode and the jitpy/jitcpp export trace it.
config = compat.build_config("gpt2", {"vocab_size": 100, "n_positions": 16,
    "n_ctx": 16, "n_embd": 32, "n_layer": 2, "n_head": 2}, torchscript=True)
torch.manual_seed(0)
model = compat.model_class("GPT2Model")(config).eval()
ids = torch.randint(0, 100, (2, 7))
with torch.no_grad():
    traced = compat.jit_trace(torch, model, ids)
    eager = compat.last_hidden_state(model(ids))
    report["gpt2_trace_diff"] = float((compat.last_hidden_state(traced(ids)) - eager).abs().max())
print(json.dumps(report))
"""


@pytest.mark.parametrize("era, version, legacy", [
    pytest.param("hf2019", "2.1.1", True, marks=pytest.mark.era),
    pytest.param("current", "4.57.6", False, marks=pytest.mark.framework)])
def test_compat_builds_every_config_and_reads_outputs_in_each_era(era, version, legacy):
    result = subprocess.run(
        [era_python(era), "-c", PROBE, os.path.join(REPO, "config", "models"),
         os.path.join(REPO, "tests", "data", "models")],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, **PACKAGE_PATH))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["transformers"] == version and report["legacy"] is legacy
    # XLNet and Transfo-XL (n_token) and XLM (n_words) get their vocabulary in both eras.
    assert report["vocab"]["xlnet-base-cased"] == 32000
    assert report["vocab"]["transfo-xl-wt103"] == 267735
    assert report["vocab"]["xlm-mlm-en-2048"] == 30145
    # The 2019 stack builds the ten 2019 checkpoints, today's ALBERT and ELECTRA too; 2.1.1's
    # lack is said in words (their points become skipped rows).
    assert len(report["vocab"]) == (10 if legacy else 12)
    if legacy:
        assert report["missing"] == {
            "albert-base-v2": "transformers 2.1.1 has no PyTorch model for model type 'albert'",
            "electra-small-discriminator":
                "transformers 2.1.1 has no PyTorch model for model type 'electra'"}
    assert report["outputs_are_tuple"] is legacy  # tuples in 2.1.1, ModelOutput in 4.x
    assert report["hidden_shape"] == [2, 5, 32]
    # GPT-2 traces in both eras (today through jit_trace's explicit causal mask), same output.
    assert report["gpt2_trace_diff"] < 1e-5


@pytest.mark.era
def test_a_model_type_the_era_lacks_gives_skipped_rows_not_a_crash(tmp_path):
    """ALBERT in the 2019 stack (transformers 2.1.1 has no ALBERT): its reference job ends well,
    saying why, and its cell's points are skipped rows with the reason."""
    python, model = era_python("hf2019"), os.path.join(REPO, "config", "models",
                                                       "albert-base-v2.json")
    reference, output = str(tmp_path / "reference"), str(tmp_path / "albert.parquet")
    for command in (["make_reference", "--model-config", model, "--sequence-lengths", "8",
                     "--output-dir", reference],
                    ["run_cell", "--era", "hf2019", "--framework", "tensorflow", "--mode",
                     "function", "--model-config", model, "--batch-sizes", "1",
                     "--sequence-lengths", "8", "--reference-dir", reference, "--output",
                     output]):
        result = subprocess.run([python, "-m", "duel.cell.commands." + command[0]] + command[1:],
                                capture_output=True, text=True, timeout=600,
                                env=dict(os.environ, **PACKAGE_PATH))
        assert result.returncode == 0, result.stderr[-3000:]
    reason = "transformers 2.1.1 has no %s model for model type 'albert'"
    with open(os.path.join(reference, "reference.json")) as handle:
        assert json.load(handle)["unsupported"] == reason % "PyTorch"
    (row,) = pq.read_table(output).to_pylist()
    assert (row["status"], row["message"]) == ("skipped", reason % "TensorFlow")
