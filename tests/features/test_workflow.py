"""End to end: the real workflow, real models of both frameworks, in a temporary directory."""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

import openpyxl
import pyarrow.parquet as pq
import pytest

from conftest import QUICK, REPO, shard_file, snakemake, write_config
from duel.cell import contract, locks

pytestmark = pytest.mark.workflow

# The grid's processes: TensorFlow's eager and function side by side in one (modes.py).
CELLS = [("pytorch", "eager"), ("tensorflow", "eager+function")]
MODES = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real run: distilbert (ok, and skipped past 512) and a tiny model that fails at 32."""
    workdir = tmp_path_factory.mktemp("run")
    models = workdir / "models"
    models.mkdir()
    for source in (os.path.join(REPO, "config", "models", "distilbert-base-uncased.json"),
                   os.path.join(REPO, "tests", "data", "models", "tiny-bert-16pos.json")):
        with open(source) as handle, open(str(models / os.path.basename(source)), "w") as out:
            out.write(handle.read())
    config = write_config(
        workdir, models_dir=str(models), models=["distilbert-base-uncased", "tiny-bert-16pos"],
        batch_sizes=[1, 2], sequence_lengths=[8, 32, 600], method=["duel", "timeit"], **QUICK)
    started = time.time()
    result = snakemake(workdir, "--cores", "all", "--configfile", config)
    return workdir, result, time.time() - started


def test_every_cell_wrote_a_shard_with_the_contract(run):
    workdir, _, _ = run
    for framework, mode in CELLS:
        for model in ("distilbert-base-uncased", "tiny-bert-16pos"):
            table = pq.read_table(shard_file(workdir, framework, mode, model))
            assert table.schema.equals(contract.SCHEMA)
            # batch sizes x lengths x methods x the process's modes, each row its mode's
            assert sorted(set(table.column("mode").to_pylist())) == sorted(mode.split("+"))
            assert table.num_rows == 2 * 3 * 2 * len(mode.split("+"))
            assert set(table.column("process_modes").to_pylist()) == {mode}


def test_points_have_real_numbers_statuses_and_environment(run):
    workdir, _, _ = run
    rows = pq.read_table(os.path.join(str(workdir), "results", "summary.parquet")).to_pylist()
    assert len(rows) == MODES * 2 * 12
    by = lambda **k: [r for r in rows if all(r[key] == value for key, value in k.items())]
    for row in by(model="distilbert-base-uncased", seq_len=8):
        assert row["status"] == "ok", row["message"]
        assert row["n_samples"] == len(row["samples"]) >= 3
        assert 0 < row["min"] <= row["median"] <= row["max"]
        assert row["peak_host_rss_mb"] > 200 and row["peak_host_rss_method"] == "vmhwm-reset"
        assert row["max_abs_diff"] < 1e-4 < row["diff_tolerance"]  # same weights, same output
        reported = row["mean"] if row["method"] == "timeit" else row["median"]
        assert row["achieved_gflops"] == row["flops"] / (reported / 1000.0) / 1e9 > 0
    for row in by(method="timeit", status="ok"):
        assert row["n_samples"] == 3 and (row["repeat"], row["number"]) == (3, 2)
    for row in by(model="distilbert-base-uncased", seq_len=600):
        assert row["status"] == "skipped" and "maximum of 512" in row["message"]
    # The injected failure: 16 position embeddings, a 32-token input; the cell went on.
    for row in by(model="tiny-bert-16pos", seq_len=32):
        assert row["status"] == "error" and row["message"], row
        assert row["samples"] is None
    for row in by(model="tiny-bert-16pos", seq_len=8):
        assert row["status"] == "ok"
    versions = {(r["framework"], r["framework_version"]) for r in rows}
    assert versions == {("pytorch", "2.13.0+cpu"), ("tensorflow", "2.21.0")}
    for row in rows:
        assert row["threads"] == len(os.sched_getaffinity(0))
        assert row["runner"] == "native" and row["python"] == "%d.%d.%d" % sys.version_info[:3]
        assert row["transformers_version"] == "4.57.6"
        assert len(row["config_sha256"]) == 64 and row["git_commit"] and row["started_at"]
        assert row["cpu_model"] and row["hostname"]
        # the software as installed: .venv against envs/current-cpu.txt (duel/cell/locks.py)
        assert row["lock_file"] == "envs/current-cpu.txt" and row["drift_accepted"] is False
        assert row["lock_sha256"] == locks.lock_sha256(os.path.join(REPO, row["lock_file"]))
        assert row["installed_sha256"] == locks.set_sha256(locks.installed())
        assert row["lock_match"] == (row["lock_drift"] == "")


def test_the_run_ends_counting_its_points_and_naming_the_failures(run):
    """On the console (Snakemake's onsuccess) and in the merge log, the same lines."""
    workdir, result, _ = run
    head = ("Duel: 72 points: 36 ok, 12 skipped, 24 error. 24 of 72 points FAILED: their rows "
            "hold the status and the message")
    console = result.stderr.splitlines()
    start = next(i for i, line in enumerate(console) if line.startswith("Duel: "))
    assert console[start].startswith(head), console[start]
    failures = console[start + 1: start + 3]
    assert failures and all(line.startswith("  tiny-bert-16pos ") for line in failures), failures
    assert any(" 1x32 (error, " in line for line in failures), failures
    with open(os.path.join(str(workdir), "results", "logs", "merge_shards.log")) as handle:
        log = handle.read().splitlines()
    assert console[start] in log and failures[0] in log


def test_a_strict_run_with_failed_points_exits_non_zero_after_writing_everything(run):
    workdir, _, _ = run
    config = os.path.join(str(workdir), "test-config.yaml")
    result = snakemake(workdir, "--cores", "all", "--configfile", config, "--forcerun",
                       "merge_shards", "--config", "strict=true", check=False)
    assert result.returncode == 1, result.stderr[-3000:]
    # beside the suite's other worker some points may also stay disturbed: that is said too
    assert re.search(r"^strict: 24 failed points( and \d+ still disturbed points)?, so this run "
                     r"exits with status 1$", result.stderr, re.M), result.stderr[-3000:]
    assert any(line.startswith("Duel: 72 points: ") for line in result.stderr.splitlines())
    assert os.path.exists(os.path.join(str(workdir), "results", "statistics", "pairs.csv"))


def test_the_console_shows_each_point_as_it_ends_and_the_verdict_at_the_end(run):
    """Point lines (through each cell's progress descriptor) come before the end; the verdict,
    the counts and where the time went close the run."""
    _, result, _ = run
    console = result.stderr.splitlines()
    points = [i for i, line in enumerate(console)
              if line.startswith("distilbert-base-uncased pytorch eager 1x8 duel r1: ")]
    verdict = console.index("Verdict (PyTorch time / TensorFlow time; < 1: PyTorch faster):")
    assert points and points[0] < verdict, console[-40:]
    block = console[verdict:]
    assert "  PyTorch eager vs TensorFlow function (current cpu fp32 inference duel):" in block
    assert any(re.match(r"    of \d+ points: PyTorch faster \d+, TensorFlow faster \d+, "
                        r"equivalent \d+, undecided \d+(, \d+ of them disturbed)?$", line)
               for line in block), block
    assert any(line.startswith("Files: results/summary.xlsx") for line in block)
    assert any(line.startswith("Time: ") and "producing reported figures" in line
               for line in block), block
    assert any(line.strip().startswith("cell start-up") for line in block)


def test_spreadsheet_matches_the_shards(run):
    workdir, _, _ = run
    workbook = openpyxl.load_workbook(os.path.join(str(workdir), "results", "summary.xlsx"))
    assert workbook.sheetnames == [
        "about", "long",
        "current cpu PT eager duel", "current cpu PT eager timeit",
        "current cpu TF eager duel", "current cpu TF eager timeit",
        "current cpu TF func duel", "current cpu TF func timeit",
        "ratio PT-TF", "statistics", "noise", "mode speed-up", "GFLOP per s", "cross-era",
        "timeline", "deployment", "historical 2019", "environment", "time", "columns"]
    time_sheet = [list(r) for r in workbook["time"].iter_rows(values_only=True)]
    assert time_sheet[1] == ["part", "seconds", "share"]
    parts = {row[0]: row[1] for row in time_sheet[2:9]}
    assert parts["timed samples"] > 0 and parts["cell start-up"] > 0
    assert parts["reference jobs"] > 0  # the reference manifests' wall_s
    sheet = [list(r) for r in workbook["current cpu TF func duel"].iter_rows(values_only=True)]
    assert sheet[2] == ["model", "1x8", "1x32", "1x600", "2x8", "2x32", "2x600"]
    shard = pq.read_table(shard_file(workdir, "tensorflow", "function", "distilbert-base-uncased"))
    medians = {(r["batch_size"], r["seq_len"]): r["median"] for r in shard.to_pylist()
               if r["method"] == "duel" and r["mode"] == "function"}
    distilbert = next(row for row in sheet if row[0] == "distilbert-base-uncased")
    assert distilbert[1:] == [medians[(1, 8)] / 1000.0, medians[(1, 32)] / 1000.0, "N/A",
                              medians[(2, 8)] / 1000.0, medians[(2, 32)] / 1000.0, "N/A"]
    gflops = [list(r) for r in workbook["GFLOP per s"].iter_rows(values_only=True)]
    title = next(i for i, row in enumerate(gflops) if row[0] and row[0].startswith("tensorflow")
                 and "(function, fp32)" in row[0] and "method duel" in row[0])
    assert gflops[title + 1][0].startswith("nominal peak: ")
    block = gflops[title + 3: title + 5]
    achieved = {(r["batch_size"], r["seq_len"]): r["achieved_gflops"] for r in shard.to_pylist()
                if r["method"] == "duel"}
    distilbert_gflops = next(row for row in block if row[0] == "distilbert-base-uncased")
    assert distilbert_gflops[1] == achieved[(1, 8)] and distilbert_gflops[3] == "N/A"
    tiny = next(row for row in sheet if row[0] == "tiny-bert-16pos")
    assert tiny[2] == "N/A" and isinstance(tiny[1], float)
    long_sheet = [list(r) for r in workbook["long"].iter_rows(values_only=True)]
    header = long_sheet[0]
    records = [dict(zip(header, row)) for row in long_sheet[1:]]
    ok = [r for r in records if r["status"] == "ok"]
    assert ok and all(json.loads(r["samples"])[0] > 0 for r in ok)
    assert {r["status"] for r in records} == {"ok", "skipped", "error"}


def test_a_finished_run_has_nothing_left_to_do(run):
    workdir, _, _ = run
    result = snakemake(workdir, "-n", "--cores", "all", "--configfile",
                       os.path.join(str(workdir), "test-config.yaml"))
    assert "Nothing to be done" in result.stdout + result.stderr


def test_the_run_has_its_charts_statistics_and_report(run):
    """A default target builds every chart kind; `snakemake --report` gathers them with the
    spreadsheet, the statistics and the environment."""
    workdir, _, _ = run
    results = os.path.join(str(workdir), "results")
    scopes = ["current_cpu_fp32_inference_duel", "current_cpu_fp32_inference_timeit"]
    for kind in ("ratio", "frameworks", "length", "modes", "memory", "gflops"):
        files = sorted(os.listdir(os.path.join(results, "plots", kind)))
        assert [f for f in files if not f.startswith(".")] == sorted(
            "%s.%s" % (scope, ext) for scope in scopes for ext in ("png", "svg")), kind
    assert "not-in-this-run.png" in os.listdir(os.path.join(results, "plots", "eras"))
    # one process per cell here: the noise kind says there is no spread to show
    assert "not-in-this-run.png" in os.listdir(os.path.join(results, "plots", "noise"))
    # and no deployment mode ran
    assert "not-in-this-run.png" in os.listdir(os.path.join(results, "plots", "deployment"))
    # nor task generation
    assert "not-in-this-run.png" in os.listdir(os.path.join(results, "plots", "generation"))
    with open(os.path.join(results, "statistics", "ratios.csv")) as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 2 * 2 * 2 * 6  # methods x TensorFlow modes x models x points
    verdicts = " | ".join(line["verdict"] for line in lines)
    assert "too few samples" in verdicts  # the quick settings take 3 samples per point
    assert "PyTorch error, TensorFlow error" in verdicts and "PyTorch N/A, TensorFlow N/A" in \
        verdicts

    report_path = os.path.join(results, "report.html")
    result = snakemake(workdir, "--configfile",  # no --cores: the report runs no job
                       os.path.join(str(workdir), "test-config.yaml"), "--report", report_path)
    assert "Report created" in result.stderr + result.stdout
    with open(report_path) as handle:
        page = handle.read()
    for name in ("summary.xlsx", "environment.html", "statistics.html", "ratios.csv",
                 "current_cpu_fp32_inference_duel.png", "Which framework is faster",
                 "Time vs sequence length", "Graph modes vs eager"):
        assert name in page, name
    assert page.count("data:image/png;") == 17  # every chart's PNG (the placeholders too)


def test_a_killed_run_resumes_and_keeps_finished_shards(tmp_path, models_dir):
    """SIGKILL the whole run while its second cell runs; the rerun keeps the first shard.

    Steps: the shared reference, two cells (TensorFlow's modes share one), the merge,
    statistics, charts, environment, the target.
    """
    config = write_config(tmp_path, models_dir=models_dir, models=["tiny-bert-16pos"],
                          batch_sizes=[1], sequence_lengths=[8], method="duel", **QUICK)
    command = [sys.executable, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
               "--directory", str(tmp_path), "--cores", "all", "--configfile", config]
    log_path = str(tmp_path / "first-run.log")
    shards = [shard_file(tmp_path, framework, mode, "tiny-bert-16pos") for framework, mode in CELLS]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=str(tmp_path), stdout=log, stderr=log,
                                   start_new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            with open(log_path) as log:
                if "2 of 8 steps (25%) done" in log.read():
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("the first cell never finished")
        time.sleep(1.0)  # the second cell is running now
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finished = [path for path in shards if os.path.exists(path)]
    assert len(finished) == 1
    mtime = os.stat(finished[0]).st_mtime_ns
    with open(finished[0], "rb") as handle:
        content = handle.read()
    assert not os.path.exists(os.path.join(str(tmp_path), "results", "summary.xlsx"))

    snakemake(tmp_path, "--unlock", "--cores", "1", "--configfile", config)
    result = snakemake(tmp_path, "--cores", "all", "--rerun-incomplete", "--configfile", config)
    assert os.stat(finished[0]).st_mtime_ns == mtime, result.stderr[-3000:]
    with open(finished[0], "rb") as handle:
        assert handle.read() == content
    assert "run_cell 1" in " ".join(result.stderr.split())  # only the unfinished cell
    assert all(os.path.exists(path) for path in shards)
    assert os.path.exists(os.path.join(str(tmp_path), "results", "summary.xlsx"))


@pytest.mark.era
def test_both_eras_run_side_by_side_and_the_cross_era_sheet_pairs_them(tmp_path):
    """The 2019 stack (built by the workflow from envs/hf2019.txt) beside today's, one run."""
    config = write_config(tmp_path, eras=["hf2019", "current"],
                          models=["distilbert-base-uncased", "gpt2"], batch_sizes=[1],
                          sequence_lengths=[8], modes={"pytorch": ["eager"],
                                                       "tensorflow": ["function"]},
                          method="timeit", **QUICK)
    snakemake(tmp_path, "--cores", "all", "--configfile", config)
    versions = {"hf2019": {"pytorch": "1.3.0", "tensorflow": "2.0.0"},
                "current": {"pytorch": "2.13.0+cpu", "tensorflow": "2.21.0"}}
    pythons = {"hf2019": "3.7.", "current": "3.11."}
    runners = {"hf2019": "venv", "current": "native"}
    for era in versions:
        for framework, mode in (("pytorch", "eager"), ("tensorflow", "function")):
            for model in ("distilbert-base-uncased", "gpt2"):
                path = shard_file(tmp_path, framework, mode, model, era)
                (row,) = pq.read_table(path).to_pylist()
                assert row["status"] == "ok", row["message"]
                assert row["framework_version"] == versions[era][framework]
                assert row["transformers_version"] == ("2.1.1" if era == "hf2019" else "4.57.6")
                assert row["python"].startswith(pythons[era]) and row["runner"] == runners[era]
                assert row["n_samples"] == 3 and row["mean"] > 0
    rows = pq.read_table(os.path.join(str(tmp_path), "results", "summary.parquet")).to_pylist()
    means = {(r["era"], r["framework"], r["model"]): r["mean"] for r in rows}
    workbook = openpyxl.load_workbook(os.path.join(str(tmp_path), "results", "summary.xlsx"))
    sheet = [list(r) for r in workbook["cross-era"].iter_rows(values_only=True)]
    titles = [row[0] for row in sheet if row[0] and "method timeit:" in str(row[0])]
    assert len(titles) == 2 and "pytorch 2.13.0+cpu / 1.3.0" in titles[0]
    assert "tensorflow 2.21.0 / 2.0.0" in titles[1]
    ratios = [row for row in sheet if row[0] in ("distilbert-base-uncased", "gpt2")]
    expected = [means[("current", framework, model)] / means[("hf2019", framework, model)]
                for framework in ("pytorch", "tensorflow")
                for model in ("distilbert-base-uncased", "gpt2")]
    assert [row[1] for row in ratios] == expected
    historical = [list(r) for r in workbook["historical 2019"].iter_rows(values_only=True)]
    header = next(row for row in historical if row[0] == "source")
    mean_s = header.index("mean_s")
    assert any(row[0] and "published" in row[0] and row[mean_s] == 0.748 for row in historical)
    assert sum(1 for row in historical if row[0] and row[0].startswith("this run")) == 4
    csvs = sorted(name for name in os.listdir(os.path.join(str(tmp_path), "results", "csv-2019"))
                  if name.endswith(".csv"))
    assert "hf2019_cpu_tensorflow_function_inference_timeit.csv" in csvs and len(csvs) == 4
    # The timeline of the two eras: each era by its date, what got faster, the claims.
    timeline = [list(r) for r in workbook["timeline"].iter_rows(values_only=True)]
    header = next(row for row in timeline if row[:3] == ["era", "era_date", "framework_version"])
    first = timeline.index(header)
    dated = set((row[0], row[1]) for row in timeline[first + 1:first + 9])
    assert dated == {("hf2019", "2019-10-15"), ("current", "2026-11-29")}
    header = next(row for row in timeline if row[:2] == ["era_new", "era_old"])
    faster = timeline[timeline.index(header) + 1]
    assert faster[:2] == ["current", "hf2019"] and faster[header.index("verdict")]  # judged
    claims = next(row for row in timeline if row[0] and str(row[0]).startswith(
        "Hugging Face benchmark, October 2019") and "TensorFlow is usually" in str(row[2]))
    assert claims[4] and claims[5] in ("agrees", "disagrees", "not clear")
    charts = [name for name in os.listdir(os.path.join(str(tmp_path), "results", "plots",
                                                       "timeline")) if not name.startswith(".")]
    assert sorted(charts) == sorted("cpu_fp32_inference_timeit_%s.%s" % (model, kind)
                                    for model in ("distilbert-base-uncased", "gpt2")
                                    for kind in ("png", "svg"))
