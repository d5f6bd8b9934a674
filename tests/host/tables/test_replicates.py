"""Replicates: the point table that combines them, and intervals that see between-process noise.

Known answers on synthetic replicates: a shift between processes that a within-process
bootstrap calls clear is not clear over processes; a real 20% difference still is.
"""
import os

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO, pooled_figure
from duel.cell import contract, shard
from duel.host.plan import layout, planner
from duel.host.tables import replicates, summary
from duel.host.verdicts import statistics


def process(median, size, seed, jitter=0.02):
    """One process's samples: log-normal jitter around that process's own median."""
    return median * np.exp(jitter * np.random.default_rng(seed).standard_normal(size))


def processes(medians, size=40, seed=0):
    return [process(median, size, seed * 100 + index) for index, median in enumerate(medians)]


@pytest.mark.unit
def test_a_shift_between_processes_is_clear_within_one_process_but_not_over_processes():
    # PyTorch's three processes landed at 1.00, 1.12 and 0.92 (the machine's state), TensorFlow
    # at 0.97, 1.08, 1.01: no real difference. One process each looks clear...
    pytorch, tensorflow = processes([1.00, 1.12, 0.92], seed=1), processes([0.97, 1.08, 1.01],
                                                                           seed=2)
    low, high = statistics.bootstrap_ratio(pytorch[1], tensorflow[0])
    assert statistics.is_clear(low, high, (low + high) / 2, 0.05)
    # ... the same data over processes is not.
    low, high = statistics.bootstrap_ratio(pytorch, tensorflow)
    ratio = pooled_figure(pytorch) / pooled_figure(tensorflow)
    assert low < 1.0 < high and not statistics.is_clear(low, high, ratio, 0.05)


@pytest.mark.unit
def test_a_real_twenty_percent_difference_stays_clear_over_processes():
    pytorch = processes([1.20, 1.23, 1.18], seed=3)
    tensorflow = processes([1.00, 1.02, 0.99], seed=4)
    low, high = statistics.bootstrap_ratio(pytorch, tensorflow)
    ratio = pooled_figure(pytorch) / pooled_figure(tensorflow)
    assert 1.1 < low < ratio < high < 1.35
    assert statistics.verdict(ratio, low, high, 0.05, "PyTorch faster", "TensorFlow faster") == \
        (True, "TensorFlow faster")


@pytest.mark.unit
def test_a_difference_below_the_minimum_effect_with_a_tight_interval_is_equivalent():
    pytorch = [process(1.03, 400, 5, jitter=0.001)]
    tensorflow = [process(1.00, 400, 6, jitter=0.001)]
    low, high = statistics.bootstrap_ratio(pytorch, tensorflow)
    assert low > 1.0  # the interval alone would call it
    clear, text = statistics.verdict(1.03, low, high, 0.05, "PyTorch faster", "TensorFlow faster")
    assert (clear, text) == (False, "equivalent (within 5%)")  # not clear, and decided
    assert statistics.verdict(1.03, low, high, 0.02, "a", "b") == (True, "b")


@pytest.mark.unit
def test_clear_needs_the_whole_interval_beyond_the_minimum_effect_not_only_the_ratio():
    # A ratio of 1.08 whose interval reaches down to 1.02: it excludes 1 and the ratio alone is
    # beyond 5%, but the evidence does not say the difference is 5% or more; a rerun of such a
    # point is as likely to land at 1.04 (not clear) as at 1.08: undecided.
    assert statistics.verdict(1.08, 1.02, 1.12, 0.05, "a", "b") == (False, "undecided")
    assert statistics.verdict(1.08, 1.06, 1.12, 0.05, "a", "b") == (True, "b")
    assert statistics.verdict(0.90, 0.85, 0.94, 0.05, "a", "b") == (True, "a")
    assert statistics.verdict(0.90, 0.85, 0.96, 0.05, "a", "b")[0] is False  # 0.96 > 1/1.05
    assert statistics.verdict(1.08, 0.98, 1.12, 0.05, "a", "b") == (False, "undecided")
    assert statistics.is_clear(1.001, 1.01) and not statistics.is_clear(0.99, 1.01)


@pytest.mark.unit
def test_pooled_figures_median_of_medians_and_mean_of_all_samples():
    groups = [[1.0, 2.0, 3.0], [10.0, 10.0, 10.0, 10.0], [4.0]]
    assert pooled_figure(groups, "median") == 4.0  # median of 2, 10, 4
    assert pooled_figure(groups, "mean") == pytest.approx(50.0 / 8)


@pytest.mark.unit
def test_the_interval_says_whether_it_saw_more_than_one_process():
    assert statistics.interval_kind(3, 3) == statistics.BETWEEN
    assert statistics.interval_kind(1, 3) == statistics.WITHIN


def point_row(framework, replicate, median, status="ok", n=20, method="duel", **extra):
    row = contract.empty_row()
    row.update(era="current", device="cpu", framework=framework, mode="eager",
               precision="fp32", task="inference", model="gpt2", replicate=replicate,
               batch_size=1, seq_len=8, method=method, status=status, cpu_model="Test CPU",
               threads=2, framework_version="1.0", hostname="node%d" % replicate, flops=2e9)
    if status == "ok":
        samples = [float(value) for value in process(median, n, replicate * 7 + len(framework))]
        row.update(samples=samples, n_samples=n, median=float(np.median(samples)),
                   mean=float(np.mean(samples)), std=float(np.std(samples, ddof=1)),
                   min=min(samples), max=max(samples), p90=float(np.percentile(samples, 90)))
    else:
        row["message"] = "RuntimeError: out of memory"
    row.update(extra)
    return row


def merged(tmp_path, rows):
    path = shard.write_shard(rows, str(tmp_path / "rows.parquet"))
    return summary.read_shards([path])


@pytest.mark.unit
def test_the_point_table_pools_replicates_and_measures_their_spread(tmp_path):
    rows = [point_row("pytorch", r, m) for r, m in ((1, 10.0), (2, 12.0), (3, 10.5))]
    table = replicates.point_table(merged(tmp_path, rows))
    assert len(table) == 1
    point = table.iloc[0]
    medians = [row["median"] for row in rows]
    assert point["replicates"] == 3 and point["median"] == float(np.median(medians))
    assert point["replicate_figures"] == medians
    assert point["replicate_spread"] == pytest.approx(max(medians) / min(medians))
    assert point["noisy"]  # about 20% apart
    assert point["n_samples"] == 60 and len(point["samples"]) == 60
    assert point["hostname"] == "node1; node2; node3"  # where each process ran
    assert point["achieved_gflops"] == pytest.approx(2e9 / (point["median"] / 1000) / 1e9)
    reported = summary.with_reported(merged(tmp_path, rows))
    assert reported["reported_ms"].iloc[0] == point["median"]


@pytest.mark.unit
def test_timeit_pools_the_mean_of_every_sample(tmp_path):
    rows = [point_row("pytorch", r, m, method="timeit", n=n)
            for r, m, n in ((1, 10.0, 30), (2, 14.0, 10))]
    point = replicates.point_table(merged(tmp_path, rows)).iloc[0]
    everything = rows[0]["samples"] + rows[1]["samples"]
    assert point["mean"] == pytest.approx(np.mean(everything))
    assert summary.with_reported(merged(tmp_path, rows))["reported_ms"].iloc[0] == point["mean"]


@pytest.mark.unit
def test_a_point_that_failed_in_one_replicate_is_not_ok_and_says_which(tmp_path):
    rows = [point_row("pytorch", 1, 10.0), point_row("pytorch", 2, 0, status="oom")]
    point = replicates.point_table(merged(tmp_path, rows)).iloc[0]
    assert point["status"] == "oom" and point["message"].startswith("replicate 2: ")
    assert point["median"] is None or np.isnan(point["median"])


@pytest.mark.unit
def test_an_old_shard_without_replicate_merges_as_replicate_one(tmp_path):
    row = point_row("pytorch", 1, 10.0)
    new = shard.write_shard([row], str(tmp_path / "new.parquet"))
    old_path = str(tmp_path / "old.parquet")
    pq.write_table(pq.read_table(new).drop(["replicate"]), old_path)
    frame = summary.read_shards([old_path])
    assert list(frame["replicate"]) == [1]
    point = replicates.point_table(summary.migrated(frame.drop(columns=["replicate"]))).iloc[0]
    assert point["replicates"] == 1 and point["median"] == row["median"]


# --- Processes on different machines are never pooled into a verdict ----------------------

def machine_rows(pytorch, tensorflow, device="cpu"):
    """Three processes a side, PyTorch twice TensorFlow's time (clear wherever they ran), each
    process on the machine named (``cpu_model`` on cpu, ``device_name`` on cuda)."""
    column = "cpu_model" if device == "cpu" else "device_name"
    return [point_row(framework, replicate, median, device=device, **{column: name})
            for framework, median, names in (("pytorch", 20.0, pytorch),
                                             ("tensorflow", 10.0, tensorflow))
            for replicate, name in enumerate(names, 1)]


def judged(frame):
    """The point's PyTorch/TensorFlow row, and its pair's summary row."""
    points = summary.with_reported(frame)
    ratios = statistics.point_ratios(points)
    assert len(ratios) == 1
    return ratios.iloc[0], statistics.pair_summary(ratios, points).iloc[0]


def assert_not_judged(row, pair, frame):
    """Unjudged: the ratio stands, no interval, no clear word, counted nowhere as a verdict."""
    points = replicates.point_table(frame).set_index("framework")
    assert row["ratio"] == points.loc["pytorch", "median"] / points.loc["tensorflow", "median"]
    assert pd.isna(row["ci_low"]) and pd.isna(row["ci_high"]) and pd.isna(row["clear"])
    assert pd.isna(row["decision"])
    assert (pair["compared"], pair["pytorch_clearly_faster"], pair["tensorflow_clearly_faster"],
            pair["equivalent"], pair["undecided"], pair["not_clear"]) == (1, 0, 0, 0, 0, 0)
    assert pair["geomean_low"] is None and pair["geomean_high"] is None
    assert statistics.geomean_winner(pair, statistics.MIN_EFFECT) is None


@pytest.mark.unit
@pytest.mark.parametrize("pytorch, tensorflow, machines, verdict", [
    (["CPU A", "CPU A", "CPU B"], ["CPU A"] * 3, [2, 1],
     "not judged: PyTorch's processes ran on 2 CPU models"),
    (["CPU A"] * 3, ["CPU B"] * 3, [1, 1], "not judged: PyTorch ran on CPU A, TensorFlow on CPU B"),
], ids=["a point's processes on two models", "the two sides on two models"])
def test_processes_of_two_cpu_models_are_not_judged(tmp_path, pytorch, tensorflow, machines,
                                                    verdict):
    frame = merged(tmp_path, machine_rows(pytorch, tensorflow))
    points = replicates.point_table(frame).set_index("framework")
    assert [points.loc[name, "machines"] for name in ("pytorch", "tensorflow")] == machines
    row, pair = judged(frame)
    assert row["verdict"] == verdict
    assert_not_judged(row, pair, frame)


@pytest.mark.unit
def test_a_pair_on_one_cpu_model_is_judged_as_without_the_machine(tmp_path):
    frame = merged(tmp_path, machine_rows(["CPU A"] * 3, ["CPU A"] * 3))
    assert list(replicates.point_table(frame)["machines"]) == [1, 1]
    row, pair = judged(frame)
    figures = [statistics.replicate_figures(samples, "median") for samples in
               replicates.point_table(frame)["replicate_samples"]]
    assert (row["ci_low"], row["ci_high"]) == statistics.welch_ratio(*figures, row["ratio"])
    assert row["verdict"] == "TensorFlow faster" and row["clear"] == "yes"
    assert row["decision"] == "faster"
    assert pair["tensorflow_clearly_faster"] == 1 and pair["geomean_low"] is not None
    assert statistics.geomean_winner(pair, statistics.MIN_EFFECT) == "tensorflow"
    unrecorded = frame.drop(columns=["cpu_model", "device_name"])  # a table without them
    assert list(replicates.point_table(unrecorded)["machines"]) == [1, 1]
    pd.testing.assert_frame_equal(statistics.point_ratios(unrecorded),
                                  statistics.point_ratios(frame))


@pytest.mark.unit
def test_gpu_models_are_told_apart_by_name_and_an_unnamed_gpu_by_none(tmp_path):
    mixed = merged(tmp_path, machine_rows(["A100", "H100", "H100"], ["H100"] * 3, "cuda"))
    assert judged(mixed)[0]["verdict"] == "not judged: PyTorch's processes ran on 2 GPU models"
    apart = merged(tmp_path, machine_rows(["A100"] * 3, ["H100"] * 3, "cuda"))
    assert judged(apart)[0]["verdict"] == "not judged: PyTorch ran on A100, TensorFlow on H100"
    # TensorFlow before 2.3 cannot name its GPU: that says nothing against PyTorch's name.
    unnamed = merged(tmp_path, machine_rows(["H100"] * 3, [replicates.UNNAMED_GPU] * 3, "cuda"))
    assert judged(unnamed)[0]["verdict"] == "TensorFlow faster"


@pytest.mark.unit
def test_shard_and_log_paths_follow_the_identity():
    cell = planner.Cell("current", "cpu", "pytorch", "eager", "fp32", "inference", "gpt2", 2)
    assert planner.shard_path(cell) == \
        "results/shards/current/cpu/pytorch/eager/fp32/inference/gpt2/r2.parquet"
    assert layout.LOG_PATTERN.endswith("/{model}/r{replicate}.log")
    assert contract.CELL_KEYS[-1] == "replicate" and "replicate" in contract.NAMES


@pytest.mark.unit
def test_rounds_come_first_in_the_planned_order():
    config = {"eras": ["current"], "devices": ["cpu"], "frameworks": ["pytorch", "tensorflow"],
              "modes": {"pytorch": ["eager"], "tensorflow": ["function"]}, "models": ["gpt2"],
              "replicates": 3, "runner": "native", "batch_sizes": [1], "sequence_lengths": [8],
              "method": "duel", "duel": {"max_samples": 10}}
    cells = planner.plan_cells(config, REPO)
    assert [cell.replicate for cell in cells] == [1, 1, 2, 2, 3, 3]


# --- A real workflow run with two replicates per cell ---------------------------------------

from conftest import QUICK, TEST_MODELS, shard_file, snakemake, write_config  # noqa: E402


@pytest.fixture(scope="module")
def replicated_run(tmp_path_factory):
    """The tiny model, PyTorch eager and TensorFlow eager, two processes per cell."""
    workdir = tmp_path_factory.mktemp("replicated")
    settings = dict(QUICK, replicates=2)
    config = write_config(workdir, models_dir=TEST_MODELS, models=["tiny-bert-16pos"],
                          modes={"pytorch": ["eager"], "tensorflow": ["eager"]},
                          batch_sizes=[1], sequence_lengths=[8], method="duel", **settings)
    snakemake(workdir, "--cores", "1", "--configfile", config)
    return workdir, config


@pytest.mark.workflow
def test_each_replicate_is_its_own_process_shard_and_log(replicated_run):
    workdir, _ = replicated_run
    rows = []
    for framework in ("pytorch", "tensorflow"):
        for replicate in (1, 2):
            path = shard_file(workdir, framework, "eager", "tiny-bert-16pos",
                              replicate=replicate)
            rows += pq.read_table(path).to_pylist()
            log = path.replace(os.path.join("results", "shards"),
                               os.path.join("results", "logs", "cells"))
            assert os.path.isfile(log[: -len(".parquet")] + ".log")
    assert sorted((row["framework"], row["replicate"]) for row in rows) == [
        ("pytorch", 1), ("pytorch", 2), ("tensorflow", 1), ("tensorflow", 2)]
    assert all(row["status"] == "ok" for row in rows)
    assert len(set(row["config_sha256"] for row in rows if row["framework"] == "pytorch")) == 1
    # Rounds: every replicate 1 started before any replicate 2 (the jobs' own start times).
    first = max(row["started_at"] for row in rows if row["replicate"] == 1)
    second = min(row["started_at"] for row in rows if row["replicate"] == 2)
    assert first <= second


@pytest.mark.workflow
def test_the_reports_rest_on_both_replicates(replicated_run):
    workdir, _ = replicated_run
    results = os.path.join(str(workdir), "results")
    summary_rows = pq.read_table(os.path.join(results, "summary.parquet")).to_pylist()
    assert len(summary_rows) == 4  # the long table keeps every replicate's row
    workbook = openpyxl.load_workbook(os.path.join(results, "summary.xlsx"))
    layout = [list(row) for row in workbook["current cpu PT eager duel"].iter_rows(
        values_only=True)]
    assert "2 processes per point" in layout[1][0]
    pt = sorted((row for row in summary_rows if row["framework"] == "pytorch"),
                key=lambda row: row["replicate"])
    assert layout[3][1] == pytest.approx(np.median([row["median"] for row in pt]) / 1000.0)
    noise = [list(row) for row in workbook["noise"].iter_rows(values_only=True)]
    assert "2 processes per point" in noise[0][0] and "replicate_spread" in noise[1]
    ratios = pd.read_csv(os.path.join(results, "statistics", "ratios.csv"))
    assert list(ratios["replicates_pt"]) == [2] and list(ratios["interval"]) == [
        statistics.BETWEEN]
    assert os.path.isfile(os.path.join(results, "plots", "noise",
                                       "current_cpu_fp32_inference_duel.png"))


@pytest.mark.workflow
def test_adding_a_replicate_runs_only_the_new_round(replicated_run):
    workdir, config = replicated_run
    result = snakemake(workdir, "-n", "--cores", "1", "--configfile", config, "--config",
                       "replicates=3")
    assert "run_cell" in result.stdout
    jobs = [line for line in result.stdout.splitlines() if line.startswith("run_cell")]
    assert jobs and jobs[0].split()[-1] == "2", result.stdout  # the two r3 cells only
    outputs = [line for line in result.stdout.splitlines()
               if line.strip().startswith("output: results/shards/")]
    assert len(outputs) == 2 and all(line.endswith("/r3.parquet") for line in outputs)


@pytest.mark.unit
def test_every_column_is_pooled_over_processes_as_the_contract_declares(tmp_path):
    """Three processes give each numeric column 2, 9 and 4 (or 1, 0, 1 for a flag): the point
    table holds what the column's declared pooling says, for every column so declared."""
    values = {}
    for declared in contract.DECLARED:
        if declared.pool in (contract.KEY, contract.PROCESS, contract.WORST, contract.SAMPLES,
                             contract.DERIVED, contract.OWN_ROW) or declared.name in (
                                 "attempt", "remeasure", "counted"):  # which rows count
            continue
        if pa.types.is_boolean(declared.type):
            values[declared.name] = [True, False, True]
        elif pa.types.is_integer(declared.type) or pa.types.is_floating(declared.type):
            values[declared.name] = [2, 9, 4]
    rows = [point_row("pytorch", replicate, 10.0, **dict(
        (name, column[replicate - 1]) for name, column in values.items()))
        for replicate in (1, 2, 3)]
    point = replicates.point_table(merged(tmp_path, rows)).iloc[0]
    expected = {contract.LARGEST: 9, contract.MEDIAN_OF: 4, contract.AGREED: 2}
    wrong = dict((name, point[name]) for name, column in values.items()
                 if name in point and not isinstance(column[0], bool)
                 and point[name] != expected[contract.BY_NAME[name].pool])
    assert wrong == {}
    assert [name for name in values if name not in point] == []
