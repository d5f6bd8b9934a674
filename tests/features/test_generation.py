"""Task generation: greedy generate of a causal language model in both frameworks, time to first
token and per output token, the same tokens as PyTorch eager's, and the eras without it."""
import os
import subprocess

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import (QUICK, REPO, TEST_MODELS, cell_command, generation_rows, snakemake,
                      write_config)
from duel.cell import contract, reference, timing
from duel.host.store import archive, questions
from duel.host.tables import summary
from duel.host.verdicts import generation

TINY = os.path.join(TEST_MODELS, "tiny-gpt2.json")
MODELS = os.path.join(REPO, "config", "models")
NEW_TOKENS = 6


@pytest.mark.unit
def test_first_token_and_per_token_split_recorded_calls():
    """Recorded calls: one-token calls of about 10 ms and whole calls of 6 tokens of about
    10 + 5 x 2 ms give 10 ms to the first token and 2 ms per token after it, never the total
    over every token (20 / 6 = 3.3 ms)."""
    first = timing.Measurement([10.4, 9.9, 10.0, 10.1, 12.0], 10.48, 3, None, None, 30.0)
    whole = timing.Measurement([20.0, 19.5, 20.6, 25.0, 20.1], 21.04, 3, None, None, 40.0)
    columns = timing.generation_columns(first, whole, batch_size=2, new_tokens=NEW_TOKENS)
    assert columns["first_token_ms"] == pytest.approx(10.1)
    assert columns["per_token_ms"] == pytest.approx((20.1 - 10.1) / 5)
    assert columns["tokens_per_s"] == pytest.approx(2 * 6 / 0.0201)
    assert columns["first_token_samples"] == [10.4, 9.9, 10.0, 10.1, 12.0]
    assert columns["first_token_first_call_ms"] == 30.0
    assert timing.generation_split(10.0, 10.0, 1, 1)[1] is None  # one token: no decode


@pytest.mark.unit
def test_a_first_divergence_is_allowed_only_at_a_near_tie():
    tokens = np.array([5, 6, 7, 8])
    margins = np.array([0.5, 1e-5, 0.3, 0.2])
    expected = (tokens, margins, 4.0)  # a tolerance of 1e-3 x 4
    same, problem = reference.token_judgement(np.array([[5, 6, 7, 8]] * 2), expected)
    assert problem is None and same["tokens_agree"] == 4 and same["token_margin"] is None
    tie, problem = reference.token_judgement(np.array([[5, 6, 7, 8], [5, 9, 1, 2]]), expected)
    assert problem is None and tie["tokens_agree"] == 1 and tie["token_margin"] == 1e-5
    apart, problem = reference.token_judgement(np.array([[5, 6, 9, 9]]), expected)
    assert apart["tokens_agree"] == 2 and apart["token_margin"] == 0.3
    assert problem.startswith("generated tokens differ from PyTorch eager's") and \
        "from token 3 of 4" in problem


@pytest.mark.unit
def test_each_points_ratios_are_the_verdicts_of_a_pair_of_one_point():
    """A stored real generation run (tests/data/store-8220d59: tiny-gpt2 1x8, two processes a
    framework): each time's ratio per point is the median of PyTorch's processes' over
    TensorFlow's, judged between processes, and a pair of one point has that ratio as its
    geometric mean, with the same decision."""
    store = os.path.join(REPO, "tests", "data", "store-8220d59")
    frame = questions.run_frame(store, archive.run_ids(store)[0])
    ratios = generation.point_ratios(frame).set_index("figure")
    (verdict,) = generation.generation_verdict(frame).to_dict("records")
    samples = {framework: [list(row) for row in frame.loc[frame["framework"] == framework,
                                                          "first_token_samples"]]
               for framework in ("pytorch", "tensorflow")}
    first = [np.median([np.median(process) for process in samples[framework]])
             for framework in ("pytorch", "tensorflow")]
    assert ratios.loc["first_token", "ratio"] == pytest.approx(first[0] / first[1])
    for name, _ in generation.FIGURES:
        row = ratios.loc[name]
        assert row["ci_low"] < row["ratio"] < row["ci_high"]
        assert verdict[name + "_ratio"] == pytest.approx(row["ratio"])
        assert row["decision"] == "faster" and verdict[name + "_decision"] == "PyTorch faster"
    assert verdict["points"] == 1 and verdict["replicates"] == 2
    assert verdict["interval"] == "between processes" and verdict["tokens_agree"] == 1


@pytest.mark.unit
def test_a_pair_with_a_side_skipped_at_every_point_has_no_verdict_and_no_tokens_checked():
    """An era whose transformers lacks PyTorch compile's static cache: compile's rows are
    skipped, so its pairs pair no point, say so in one line, and count no tokens."""
    rows = generation_rows("hf2023", "pytorch", "eager", 40.0, 20.0, "2.0.1") + \
        generation_rows("hf2023", "tensorflow", "eager", 60.0, 50.0, "2.13.0")
    for row in generation_rows("hf2023", "pytorch", "compile", 40.0, 20.0, "2.0.1"):
        row.update(contract.empty_row(), **{key: row[key] for key in (
            "era", "device", "framework", "mode", "precision", "task", "model", "batch_size",
            "seq_len", "method", "replicate")}, status="skipped",
            message="this era's transformers has no static cache")
        rows.append(row)
    verdict = generation.generation_verdict(summary.migrated(pd.DataFrame(rows)))
    verdict = verdict.set_index("mode_pt")
    assert verdict.loc["eager", "points"] == 2 and verdict.loc["eager", "tokens_agree"] == 2
    assert verdict.loc["compile", "points"] == 0
    assert [verdict.loc["compile", "tokens_" + word] for word in ("agree", "near_tie",
                                                                  "differ")] == [0, 0, 0]
    text = generation.lines(verdict.reset_index())
    skipped = text.index("  PyTorch compile vs TensorFlow eager (hf2023 cpu fp32 generation "
                         "duel), 0 points, 0 processes per cell (within one process only):")
    assert text[skipped + 1:] == ["    no point ran on both sides: no verdict"]


@pytest.fixture(scope="module")
def generation_reference(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("generation") / "tiny")
    result = subprocess.run([*cell_command("make_reference"), "--model-config", TINY,
                             "--generation", "--new-tokens", str(NEW_TOKENS),
                             "--sequence-lengths", "8,12", "--output-dir", folder],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@pytest.mark.framework
@pytest.mark.parametrize("framework", ["pytorch", "tensorflow"])
def test_a_planted_mismatch_is_caught(tmp_path, generation_reference, framework):
    """The reference's tokens changed from the third on, where its logits are far apart: each
    framework's real tokens now differ there, and the point is an error with its times kept."""
    planted = str(tmp_path / "planted")
    subprocess.run(["cp", "-r", generation_reference, planted], check=True)
    tokens, margins, scale = reference.load_generated(planted, 8)
    tokens = tokens.copy()
    tokens[2:] = (tokens[2:] + 1) % 1000
    margins = np.maximum(margins, 1.0)  # no near-tie anywhere: a divergence is a difference
    np.savez(reference.generated_path(planted, 8), tokens=tokens, margins=margins,
             scale=np.float64(scale))
    output = str(tmp_path / "planted.parquet")
    result = subprocess.run(
        [*cell_command("run_cell"), "--framework", framework, "--task", "generation",
         "--model-config", TINY, "--batch-sizes", "2", "--sequence-lengths", "8",
         "--new-tokens", str(NEW_TOKENS), "--min-time-s", "0.02", "--warmup-calls", "1",
         "--threads", "1", "--reference-dir", planted, "--output", output],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (row,) = pq.read_table(output).to_pylist()
    assert row["status"] == "error" and row["tokens_agree"] == 2, row["message"]
    assert row["message"].startswith("generated tokens differ from PyTorch eager's")
    assert row["median"] > 0 and row["first_token_ms"] > 0  # the times are kept


def run_generation(tmp_path, framework, mode, model_config, reference_dir=None):
    """The rows of one generation cell of batch 2 and prompts of 8 and 12 tokens."""
    output = str(tmp_path / ("%s.parquet" % framework))
    result = subprocess.run(
        [*cell_command("run_cell"), "--framework", framework, "--mode", mode, "--task",
         "generation", "--model-config", model_config, "--batch-sizes", "2",
         "--sequence-lengths", "8,12", "--new-tokens", str(NEW_TOKENS), "--min-time-s", "0.02",
         "--warmup-calls", "1", "--output", output]
        + (["--reference-dir", reference_dir] if reference_dir else []),
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return pq.read_table(output).to_pylist()


@pytest.mark.framework
@pytest.mark.parametrize("framework, mode", [("pytorch", "compile"), ("tensorflow", "xla")])
def test_compiled_generation_gives_eager_tokens_and_its_compilation_apart(
        tmp_path, generation_reference, framework, mode):
    """PyTorch compile (generate's compiled decoding over a static cache) and TensorFlow xla
    (generate under XLA; 12 tokens padded to 16): every generation column, the same tokens as
    PyTorch eager's, a first token timed on its own and never a share of the whole call, and
    the compilation in the first calls, not in the samples."""
    rows = run_generation(tmp_path, framework, mode, TINY, generation_reference)
    assert sorted((r["mode"], r["seq_len"]) for r in rows) == [(mode, 8), (mode, 12)]
    for row in rows:
        assert row["status"] == "ok", row["message"]
        assert row["tokens_agree"] == NEW_TOKENS and row["new_tokens"] == NEW_TOKENS
        assert len(row["first_token_samples"]) >= 3 and len(row["samples"]) >= 3
        assert 0 < row["first_token_ms"] < row["median"]
        assert row["per_token_ms"] == pytest.approx(
            (row["median"] - row["first_token_ms"]) / (NEW_TOKENS - 1))
        assert row["first_call_ms"] > row["median"]  # compiled in its first call
        assert row["first_token_first_call_ms"] > 0
    if mode == "compile":
        assert all(r["compiles"] >= 1 and r["recompiles"] == 0 and r["graph_breaks"] == 0
                   for r in rows)
    else:  # the first-token call compiles a graph of its own
        assert all(r["first_token_first_call_ms"] > r["first_token_ms"] for r in rows)


@pytest.mark.framework
def test_compiled_generation_of_a_class_without_a_static_cache_is_skipped(tmp_path):
    """OpenAI GPT's class declares no static cache: its compiled generation is a skipped row
    saying so, and nothing is built."""
    rows = run_generation(tmp_path, "pytorch", "compile", os.path.join(MODELS, "openai-gpt.json"))
    assert len(rows) == 2 and all(r["status"] == "skipped" for r in rows)
    assert all("OpenAIGPTLMHeadModel has no static key/value cache" in r["message"]
               for r in rows)


@pytest.mark.workflow
def test_generation_rows_in_both_frameworks_and_skipped_in_an_era_without_it(tmp_path):
    """A real run of the tiny GPT-2 in hf2019 and current: current's points generate the same
    tokens as PyTorch eager's in both frameworks, with every generation column; hf2019's are
    skipped rows saying its transformers has no generate; a length whose prompt and new tokens
    pass the model's 64 positions is skipped too."""
    models = tmp_path / "models"
    models.mkdir()
    subprocess.run(["cp", TINY, str(models)], check=True)
    config = write_config(tmp_path, models_dir=str(models), eras=["hf2019", "current"],
                          models=["tiny-gpt2"], tasks=["generation"], batch_sizes=[1, 2],
                          sequence_lengths=[8, 60], generation={"new_tokens": NEW_TOKENS},
                          modes={"pytorch": ["eager"], "tensorflow": ["eager"]},
                          method="duel", **QUICK)
    result = snakemake(tmp_path, "--cores", "1", "--configfile", config)
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    assert {r["task"] for r in rows} == {"generation"}
    old = [r for r in rows if r["era"] == "hf2019"]
    assert {(r["framework"], r["status"]) for r in old} == {("pytorch", "skipped"),
                                                            ("tensorflow", "skipped")}
    assert all("era hf2019 lacks generation: transformers 2.1.1's models have no generate"
               in r["message"] for r in old)
    current = [r for r in rows if r["era"] == "current"]
    assert len(current) == 8
    for row in current:
        if row["seq_len"] == 60:
            assert row["status"] == "skipped" and "a prompt of 60 and 6 new tokens" in \
                row["message"]
            continue
        assert row["status"] == "ok", (row["framework"], row["message"])
        assert row["tokens_agree"] == NEW_TOKENS and row["new_tokens"] == NEW_TOKENS
        assert len(row["first_token_samples"]) >= 3 and len(row["samples"]) >= 3
        assert 0 < row["first_token_ms"] < row["median"]
        assert row["per_token_ms"] == pytest.approx(
            (row["median"] - row["first_token_ms"]) / (NEW_TOKENS - 1))
        assert row["tokens_per_s"] == pytest.approx(
            row["batch_size"] * NEW_TOKENS / (row["median"] / 1000.0))
        assert row["peak_host_rss_mb"] > 0 and row["flops"] is None
        assert row["first_call_ms"] > 0 and row["first_token_first_call_ms"] > 0
    assert "Generation (PyTorch / TensorFlow" in result.stdout + result.stderr
    charts = os.listdir(os.path.join(str(tmp_path), "results", "plots", "generation"))
    assert "current_cpu_fp32_generation_duel.svg" in charts, charts


@pytest.mark.workflow
@pytest.mark.era
@pytest.mark.parametrize("era, transformers", [("hf2023", "4.31.0")])
def test_an_older_era_generates_pytorch_eagers_tokens_in_both_frameworks(tmp_path, era,
                                                                          transformers):
    """A real run of the tiny GPT-2 in an era that declares no lack of generation: both
    frameworks' points ok, exactly the new tokens, each the same as PyTorch eager's there."""
    models = tmp_path / "models"
    models.mkdir()
    subprocess.run(["cp", TINY, str(models)], check=True)
    config = write_config(tmp_path, models_dir=str(models), eras=[era], models=["tiny-gpt2"],
                          tasks=["generation"], batch_sizes=[2], sequence_lengths=[8],
                          generation={"new_tokens": NEW_TOKENS},
                          modes={"pytorch": ["eager"], "tensorflow": ["eager"]},
                          method="duel", **QUICK)
    snakemake(tmp_path, "--cores", "1", "--configfile", config)
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    assert sorted((r["era"], r["framework"], r["status"], r["transformers_version"])
                  for r in rows) == [(era, "pytorch", "ok", transformers),
                                     (era, "tensorflow", "ok", transformers)]
    for row in rows:
        assert row["new_tokens"] == NEW_TOKENS and row["tokens_agree"] == NEW_TOKENS
        assert 0 < row["first_token_ms"] < row["median"]
