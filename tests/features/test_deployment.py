"""Deployment modes: real runners built from the installed wheels, the C++ timing loop held in
step with timing.py, a tiny model through every deployment mode in a workflow run, a tampered
artifact, and what planning refuses."""
import json
import os
import shutil
import subprocess
import time

import openpyxl
import pyarrow.parquet as pq
import pytest

from conftest import QUICK, REPO, TEST_MODELS, cell_command, snakemake, write_config
from duel.cell import timing
from duel.host.plan import deployment

TINY = os.path.join(TEST_MODELS, "tiny-bert-16pos.json")
RUNNERS_DIR = os.path.join(REPO, ".runners")  # the workflow's default: built once, reused
RUNTIMES = {"pytorch": "libtorch", "tensorflow": "tensorflow"}


def runner_record(framework):
    return deployment.runner_record(RUNNERS_DIR, REPO, "current", "cpu", framework)


@pytest.fixture(scope="module")
def runners():
    """framework -> the built runner's path; built like rules/deploy.smk does, unless a
    build for this lock file is there already (the cache the workflow uses too)."""
    found = {}
    for framework, runtime in RUNTIMES.items():
        record_path = runner_record(framework)
        record = None
        if os.path.exists(record_path):
            with open(record_path) as handle:
                record = json.load(handle)
        sources = os.path.join(REPO, "cpp")
        newest = max(os.path.getmtime(os.path.join(sources, name)) for name in os.listdir(sources))
        if not record or record["status"] != "ok" or os.path.getmtime(record_path) < newest:
            result = subprocess.run([*cell_command("build_runner"),
                                     "--runtime", runtime, "--record", record_path],
                                    capture_output=True, text=True, timeout=900)
            assert result.returncode == 0, result.stderr[-3000:]
            with open(record_path) as handle:
                record = json.load(handle)
        assert record["status"] == "ok", record
        found[framework] = os.path.join(os.path.dirname(record_path), record["runner"])
    return found


@pytest.mark.framework
def test_both_runners_build_from_the_installed_wheels(runners):
    import tensorflow as tf
    import torch

    versions = {"pytorch": ("libtorch", torch.__version__),
                "tensorflow": ("tensorflow-c", tf.__version__)}
    for framework, runner in runners.items():
        output = subprocess.run([runner, "--version"], capture_output=True, text=True,
                                check=True).stdout.split()
        assert tuple(output) == versions[framework]


def run_sleeping(runner, sleep_ms, settings, tmp_path):
    result = str(tmp_path / "sleep.json")
    command = [runner, "--sleep-ms", repr(sleep_ms), "--result", result]
    for name, value in settings._asdict().items():
        command += ["--" + name.replace("_", "-"), repr(value)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    with open(result) as handle:
        return json.load(handle)


def rule_stops_at(samples_ms, settings):
    """The sample count the duel stopping rule stops at, given these samples (elapsed time
    taken as their running sum: the loop's own overhead between samples is microseconds)."""
    elapsed = 0.0
    for count, sample in enumerate(samples_ms, start=1):
        elapsed += sample / 1000.0
        enough = count >= settings.min_samples and elapsed >= settings.min_time_s
        if enough or count >= settings.max_samples or elapsed >= settings.max_time_s:
            return count
    return len(samples_ms)


# (settings, call ms, exact): where the count does not depend on the clock, the two loops
# must take exactly as many samples; where a time limit stops them, within one.
IN_STEP = [
    (timing.DuelSettings(2, 7, 0.0, 100, 60.0), 2.0, True),  # min_samples decides
    (timing.DuelSettings(0, 50, 10.0, 5, 60.0), 2.0, True),  # max_samples decides
    (timing.DuelSettings(1, 1, 0.1, 1000, 60.0), 10.0, False),  # min_time_s decides
    (timing.DuelSettings(3, 100, 10.0, 1000, 0.05), 20.0, False),  # max_time_s decides
]


@pytest.mark.framework
@pytest.mark.parametrize("settings, sleep_ms, exact", IN_STEP,
                         ids=["min_samples", "max_samples", "min_time", "max_time"])
def test_the_cpp_loop_keeps_the_python_stopping_rule(runners, tmp_path, settings, sleep_ms,
                                                     exact):
    """The same settings and a call of known duration (a sleep) in timing.time_duel and in
    cpp/duel_runner.h: the same number of samples, warm-up and statistics."""
    python = timing.summarise(timing.time_duel(lambda: time.sleep(sleep_ms / 1000.0),
                                               settings=settings))
    for runner in runners.values():
        result = run_sleeping(runner, sleep_ms, settings, tmp_path)
        cpp = timing.summarise(timing.Measurement(
            result["samples_ms"], sum(result["samples_ms"]) / len(result["samples_ms"]),
            result["warmup_calls"], None, None, result["first_call_ms"]))
        # at least one warm-up call, whatever warmup_calls says (the first is never a sample)
        assert cpp["warmup_calls"] == python["warmup_calls"] == max(1, settings.warmup_calls)
        assert cpp["first_call_ms"] >= sleep_ms and python["first_call_ms"] >= sleep_ms
        if exact:
            assert cpp["n_samples"] == python["n_samples"]
        else:  # each loop stopped where the rule says, given its own samples
            for statistics in (python, cpp):
                expected = rule_stops_at(statistics["samples"], settings)
                assert abs(statistics["n_samples"] - expected) <= 1, (statistics, expected)
        # A sleep never returns early; on a busy 2-core machine it may wake late by far.
        for statistics in (python, cpp):
            assert sleep_ms <= statistics["min"] <= statistics["median"] < sleep_ms + 100


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The tiny model's reference and both exports, made by the scripts the rules run."""
    folder = tmp_path_factory.mktemp("exported")
    reference = str(folder / "reference")
    subprocess.run([*cell_command("make_reference"),
                    "--model-config", TINY, "--sequence-lengths", "8",
                    "--output-dir", reference], check=True, capture_output=True, timeout=600)
    artifacts = {}
    for artifact_format in ("torchscript", "savedmodel"):
        artifacts[artifact_format] = str(folder / artifact_format)
        subprocess.run([*cell_command("export_artifacts"),
                        "--format", artifact_format, "--model-config", TINY,
                        "--reference-dir", reference, "--batch-sizes", "1",
                        "--sequence-lengths", "8", "--output-dir", artifacts[artifact_format]],
                       check=True, capture_output=True, timeout=600)
    return reference, artifacts


def run_cell(framework, mode, reference, artifact_dir, runner_build, output):
    command = [*cell_command("run_cell"),
               "--framework", framework, "--mode", mode, "--model-config", TINY,
               "--batch-sizes", "1", "--sequence-lengths", "8", "--reference-dir", reference,
               "--artifact-dir", artifact_dir, "--runner-build", runner_build,
               "--warmup-calls", "1", "--min-samples", "3", "--min-time-s", "0.02",
               "--output", output]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (row,) = pq.read_table(output).to_pylist()
    return row


@pytest.mark.framework
@pytest.mark.parametrize("framework, mode, artifact_format, victim, words", [
    ("pytorch", "jitcpp", "torchscript", "1x8.pt", "PytorchStreamReader failed"),
    ("tensorflow", "savedcpp", "savedmodel", os.path.join("savedmodel", "saved_model.pb"),
     "loading the SavedModel"),
])
def test_a_tampered_artifact_is_an_error_row_with_the_runtimes_message(
        runners, exported, tmp_path, framework, mode, artifact_format, victim, words):
    reference, artifacts = exported
    tampered = str(tmp_path / artifact_format)
    shutil.copytree(artifacts[artifact_format], tampered)
    path = os.path.join(tampered, victim)
    with open(path, "r+b") as handle:  # keep the size, break the content
        handle.seek(0)
        handle.write(b"\x00not an artifact\x00" * 8)
    row = run_cell(framework, mode, reference, tampered, runner_record(framework),
                   str(tmp_path / "tampered.parquet"))
    assert row["status"] == "error" and words in row["message"], row["message"]
    assert row["samples"] is None
    intact = run_cell(framework, mode, reference, artifacts[artifact_format],
                      runner_record(framework), str(tmp_path / "intact.parquet"))
    assert intact["status"] == "ok", intact["message"]


@pytest.mark.workflow
def test_missing_compiler_is_refused_at_planning(tmp_path):
    """A PATH without cmake or a C++ compiler: the C/C++ modes are refused with what to
    install, before any job; the Python loaders of the artifacts still plan."""
    bare = tmp_path / "bin"
    bare.mkdir()
    environment = dict(os.environ, PATH=str(bare))
    environment.pop("CXX", None)
    refused = snakemake(tmp_path, "-n", "--cores", "1", "--config",
                        "modes={pytorch: [jitcpp], tensorflow: [savedpy]}", check=False,
                        env=environment)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "no cmake and no C++ compiler" in output, output[-3000:]
    assert "apt-get install cmake g++" in output
    assert not os.path.exists(str(tmp_path / "results"))
    planned = snakemake(tmp_path, "-n", "--cores", "1", "--config",
                        "modes={pytorch: [jitpy], tensorflow: [savedpy]}", env=environment)
    assert "export_artifacts" in planned.stdout and "build_runner" not in planned.stdout


@pytest.mark.workflow
@pytest.mark.parametrize("overrides, words", [
    (["runner=docker", "modes={pytorch: [jitcpp]}"], ["jitcpp", "runner docker",
                                                       "carry no C++ compiler"]),
    (["modes={tensorflow: [jitcpp]}"], ["tensorflow", "jitcpp"]),
])
def test_deployment_modes_are_refused_where_they_cannot_run(tmp_path, overrides, words):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", *overrides, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    for word in words:
        assert word in output, output[-3000:]


@pytest.fixture(scope="module")
def deployed_run(tmp_path_factory, runners):
    """One workflow run: the tiny model in every deployment mode and its Python graph modes,
    a length it can run (8) and one it cannot (32: 16 position embeddings)."""
    workdir = tmp_path_factory.mktemp("deployed")
    config = write_config(
        workdir, models_dir=TEST_MODELS, models=["tiny-bert-16pos"], batch_sizes=[1, 2],
        sequence_lengths=[8, 32], method=["duel", "timeit"],
        modes={"pytorch": ["torchscript", "jitpy", "jitcpp"],
               "tensorflow": ["function", "savedpy", "savedcpp"]}, **QUICK)
    result = snakemake(workdir, "--cores", "1", "--configfile", config)
    rows = pq.read_table(os.path.join(str(workdir), "results", "summary.parquet")).to_pylist()
    return workdir, result, rows


@pytest.mark.workflow
def test_every_deployment_mode_runs_the_tiny_model_end_to_end(deployed_run):
    workdir, result, rows = deployed_run
    assert "build_runner" not in result.stdout + result.stderr  # cached by the fixture
    runtimes = {"jitpy": "torch.jit (Python)", "jitcpp": "libtorch",
                "savedpy": "tf.saved_model (Python)", "savedcpp": "tensorflow-c"}
    for mode, runtime in runtimes.items():
        mine = [row for row in rows if row["mode"] == mode]
        assert len(mine) == 2 * 2 * 2  # batch sizes x lengths x methods
        for row in mine:
            if row["method"] == "timeit" and mode.endswith("cpp"):
                assert row["status"] == "skipped" and "duel method only" in row["message"]
            elif row["seq_len"] == 32:
                assert row["status"] == "error" and row["message"], row
            else:
                assert row["status"] == "ok", row["message"]
                assert row["max_abs_diff"] < row["diff_tolerance"]
                assert row["runtime"] == runtime and row["runtime_version"]
                assert row["artifact_bytes"] > 100000 and row["export_s"] > 0
                assert 0 < row["artifact_load_ms"] < row["load_ms"]
                assert row["n_samples"] == len(row["samples"]) >= 3
                assert row["peak_host_rss_mb"] > 50
        if mode.endswith("cpp"):
            ok = [row for row in mine if row["status"] == "ok"]
            assert all(row["peak_host_rss_method"].startswith("runner process") for row in ok)
            assert all(row["framework_version"] == row["runtime_version"] for row in ok)
    # artifacts are removed once their cells ran (config keep_artifacts: false)
    assert not os.path.exists(os.path.join(str(workdir), "results", "artifacts", "current",
                                           "cpu", "torchscript", "tiny-bert-16pos"))


@pytest.mark.workflow
def test_the_deployment_sheet_and_chart(deployed_run):
    workdir, _, rows = deployed_run
    results = os.path.join(str(workdir), "results")
    workbook = openpyxl.load_workbook(os.path.join(results, "summary.xlsx"))
    sheet = [list(r) for r in workbook["deployment"].iter_rows(values_only=True)]
    titles = [row[0] for row in sheet if row[0] and row[0].startswith("What Python costs")]
    assert len(titles) == 2 * 2 * 2  # (jitpy, torchscript; savedpy, function) x methods
    median = {(r["mode"], r["batch_size"], r["seq_len"]): r["median"] for r in rows
              if r["method"] == "duel"}
    at = sheet.index(next(row for row in sheet if row[0] and row[0].startswith(
        "What Python costs: pytorch jitpy time / jitcpp time") and "method duel" in row[0]))
    assert sheet[at + 1] == ["model", "1x8", "1x32", "2x8", "2x32"]
    assert sheet[at + 2] == ["tiny-bert-16pos", median[("jitpy", 1, 8)] / median[
        ("jitcpp", 1, 8)], "N/A", median[("jitpy", 2, 8)] / median[("jitcpp", 2, 8)], "N/A"]
    assert any(row[0] and row[0].startswith("Deployed, side by side: PyTorch jitcpp / "
                                            "TensorFlow savedcpp") for row in sheet)
    charts = os.listdir(os.path.join(results, "plots", "deployment"))
    assert "current_cpu_fp32_inference_duel.png" in charts


@pytest.mark.workflow
@pytest.mark.era
def test_the_2019_stack_deploys_pytorch_and_says_why_not_tensorflow(tmp_path):
    """Era hf2019: the libtorch runner builds from torch 1.3.0's wheel and runs its trace;
    TensorFlow 2.0 has no Python-free C library, so savedcpp is skipped with the reason."""
    config = write_config(tmp_path, eras=["hf2019"], models_dir=TEST_MODELS,
                          models=["tiny-bert-16pos"], batch_sizes=[1], sequence_lengths=[8],
                          modes={"pytorch": ["jitcpp"], "tensorflow": ["savedcpp"]},
                          method="duel", **QUICK)
    snakemake(tmp_path, "--cores", "1", "--configfile", config)
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    by_mode = {row["mode"]: row for row in rows}
    jitcpp = by_mode["jitcpp"]
    assert jitcpp["status"] == "ok", jitcpp["message"]
    assert (jitcpp["runtime"], jitcpp["runtime_version"]) == ("libtorch", "1.3.0")
    assert jitcpp["max_abs_diff"] < jitcpp["diff_tolerance"]
    savedcpp = by_mode["savedcpp"]
    assert savedcpp["status"] == "skipped" and "libtensorflow_cc" in savedcpp["message"]
    assert savedcpp["framework_version"] == "2.0.0"
