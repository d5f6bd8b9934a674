"""Bootstrap intervals on synthetic samples with a known answer, and the statistics tables."""
import os
import re

import numpy as np
import openpyxl
import pandas as pd
import pytest

from conftest import REPO
from duel.cell import contract, shard
from duel.host.render import pages, spreadsheet
from duel.host.tables import summary
from duel.host.verdicts import statistics

pytestmark = pytest.mark.unit


def lognormal(median, size, seed, spread=0.1):
    """Samples whose population median is exactly ``median`` (log-normal, like timings)."""
    return median * np.exp(spread * np.random.default_rng(seed).standard_normal(size))


def test_the_schema_defaults_min_effect_to_the_judges_default():
    import yaml
    with open(os.path.join(REPO, "config", "schema", "config.schema.yaml")) as handle:
        schema = yaml.safe_load(handle)
    assert schema["properties"]["min_effect"]["default"] == statistics.MIN_EFFECT


def test_constant_samples_give_the_exact_ratio_as_a_zero_width_interval():
    low, high = statistics.bootstrap_ratio([3.0] * 8, [1.5] * 8)
    assert (low, high) == (2.0, 2.0) and statistics.is_clear(low, high)


def test_a_two_fold_difference_is_clear_and_the_interval_holds_the_true_ratio():
    low, high = statistics.bootstrap_ratio(lognormal(2.0, 50, 1), lognormal(1.0, 50, 2))
    assert 1.0 < low < 2.0 < high < 2.2
    assert statistics.is_clear(low, high)


def test_the_same_distribution_twice_is_not_clear():
    low, high = statistics.bootstrap_ratio(lognormal(5.0, 40, 3), lognormal(5.0, 40, 4))
    assert low < 1.0 < high and not statistics.is_clear(low, high)


def test_intervals_cover_the_true_ratio_about_as_often_as_they_claim():
    """200 synthetic experiments with a true median ratio of 1.5: a 90% interval must cover it
    in about 90% of them (binomial: 83-96% holds with probability > 0.99 when it is right)."""
    covered = 0
    for trial in range(200):
        low, high = statistics.bootstrap_ratio(
            lognormal(1.5, 40, 1000 + trial), lognormal(1.0, 40, 5000 + trial),
            confidence=0.90, resamples=600, seed=trial)
        covered += low <= 1.5 <= high
    assert 166 <= covered <= 192, covered


def test_a_single_series_interval_and_the_mean_statistic():
    samples = lognormal(10.0, 200, 7)
    low, high = statistics.bootstrap_interval(samples)
    assert low < np.median(samples) < high and 0.05 < high - low < 0.5
    low, high = statistics.bootstrap_interval(samples, statistic="mean")
    assert low < np.mean(samples) < high


@pytest.mark.parametrize("df, confidence, expected", [
    (1, 0.95, 12.706), (10, 0.95, 2.228), (30, 0.95, 2.042), (2.5, 0.95, 3.575),
    (10, 0.90, 1.812), (5, 0.99, 4.032),
])
def test_students_t_quantile_at_any_level_and_fractional_degrees_of_freedom(df, confidence,
                                                                           expected):
    assert statistics.t_quantile(df, confidence) == pytest.approx(expected, abs=5e-4)


def test_the_t_interval_between_processes_is_made_at_any_level():
    logs = np.log([1.00, 1.10, 0.95, 1.04])
    low, high = statistics.log_t_intervals(np.array([logs.mean(), 0.0]),
                                           np.array([logs.std(ddof=1), 0.1]),
                                           np.array([logs.size, 1]), confidence=0.80)
    half = 1.638 * logs.std(ddof=1) / 2.0  # t's 90% quantile on 3 degrees of freedom
    assert (low[0], high[0]) == pytest.approx(np.exp([logs.mean() - half, logs.mean() + half]),
                                              rel=1e-3)
    assert np.isnan(low[1]) and np.isnan(high[1])  # one process: no interval
    narrow = statistics.figure_interval(np.exp(logs), confidence=0.80)
    wide = statistics.figure_interval(np.exp(logs))
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_the_same_seed_gives_the_same_interval():
    a, b = lognormal(2.0, 30, 8), lognormal(1.0, 30, 9)
    assert statistics.bootstrap_ratio(a, b) == statistics.bootstrap_ratio(a, b)
    assert statistics.bootstrap_ratio(a, b) != statistics.bootstrap_ratio(a, b, seed=1)


POINT_SEED = int(os.environ.get("DUEL_TEST_SEED", "0"))


def point_rows(framework, mode, medians, statuses=None, n=20, method="duel"):
    rows = []
    for index, ((batch, length), median) in enumerate(sorted(medians.items())):
        row = contract.empty_row()
        row.update(era="current", device="cpu", framework=framework, mode=mode,
                   task="inference", model="gpt2", batch_size=batch, seq_len=length,
                   method=method, cpu_model="Test CPU", threads=2, framework_version="1.0")
        status = (statuses or {}).get((batch, length), "ok")
        row["status"] = status
        if status == "ok":
            # A stable seed per point, the same on both sides: a pair with the same median
            # then has the same samples, an equal pair at any seed (DUEL_TEST_SEED varies it).
            samples = [float(v) for v in lognormal(median, n, POINT_SEED + index)]
            row.update(samples=samples, n_samples=n, median=float(np.median(samples)),
                       mean=float(np.mean(samples)))
        rows.append(row)
    return rows


@pytest.fixture
def frame(tmp_path):
    cells = [
        point_rows("pytorch", "eager", {(1, 8): 2.0, (1, 64): 10.0, (2, 8): 4.0, (2, 64): 5.0}),
        point_rows("tensorflow", "eager", {(1, 8): 1.0, (1, 64): 20.0, (2, 8): 4.0, (2, 64): 5.0},
                   statuses={(2, 64): "oom"}),
        point_rows("tensorflow", "function", {(1, 8): 1.0, (1, 64): 10.0, (2, 8): 8.0,
                                              (2, 64): 5.0}, n=3),
    ]
    paths = []
    for index, rows in enumerate(cells):
        paths.append(shard.write_shard(rows, os.path.join(str(tmp_path), "%d.parquet" % index)))
    return summary.read_shards(paths)


def test_point_ratios_judge_every_paired_point(frame):
    ratios = statistics.point_ratios(frame)
    eager = ratios[ratios["mode_tf"] == "eager"].set_index("point")
    assert list(eager.index) == ["1x8", "1x64", "2x8", "2x64"]
    assert eager.loc["1x8", "verdict"] == "TensorFlow faster"  # PyTorch twice as slow
    assert eager.loc["1x8", "clear"] == "yes" and eager.loc["1x8", "ci_low"] > 1.0
    assert eager.loc["1x64", "verdict"] == "PyTorch faster" and eager.loc["1x64", "ci_high"] < 1
    row = frame[(frame["framework"] == "pytorch") & (frame["seq_len"] == 64)
                & (frame["batch_size"] == 1)].iloc[0]
    other = frame[(frame["framework"] == "tensorflow") & (frame["mode"] == "eager")
                  & (frame["seq_len"] == 64) & (frame["batch_size"] == 1)].iloc[0]
    assert eager.loc["1x64", "ratio"] == row["median"] / other["median"]  # as the ratio sheet
    assert eager.loc["2x64", "verdict"] == "not compared: TensorFlow OOM"
    assert eager.loc["2x64", "ratio"] is None or np.isnan(eager.loc["2x64", "ratio"])
    function = ratios[ratios["mode_tf"] == "function"].set_index("point")
    assert function["verdict"].str.startswith("too few samples").all()  # 3 samples each
    assert function["ratio"].notna().all() and function["ci_low"].isna().all()
    assert list(eager["decision"].iloc[:2]) == ["faster", "faster"]
    # 2x8: the same median on both sides, 20 samples of one process: not enough to decide
    assert (eager.loc["2x8", "decision"], eager.loc["2x8", "verdict"],
            eager.loc["2x8", "clear"]) == ("undecided", "undecided", "no")
    assert pd.isna(eager.loc["2x64", "decision"]) and function["decision"].isna().all()
    summary_table = statistics.pair_summary(ratios).set_index("mode_tf")
    assert summary_table.loc["eager", "points"] == 4 and summary_table.loc["eager", "compared"] == 3
    assert summary_table.loc["eager", "pytorch_clearly_faster"] == 1
    assert summary_table.loc["eager", "tensorflow_clearly_faster"] == 1
    assert summary_table.loc["eager", ["equivalent", "undecided", "decided"]].tolist() == [0, 1, 2]
    assert summary_table.loc["eager", "not_clear"] == 1
    assert summary_table.loc["function", ["decided", "undecided", "not_clear"]].tolist() == [
        0, 0, 0]  # too few samples: no interval, so no decision


BAND = statistics.equivalence_band(0.05)  # 1/1.05 .. 1.05


@pytest.mark.parametrize("ratio, low, high, expected", [
    (1.00, 0.97, 1.03, "equivalent"),  # the whole interval inside the band
    (1.04, 1.0, 1.05, "equivalent"),  # touching an edge from inside
    (1.00, 0.90, 1.03, "undecided"),  # across the lower edge
    (1.03, 1.01, 1.08, "undecided"),  # across the upper edge, though it excludes 1
    (1.00, 0.80, 1.20, "undecided"),  # across both
    (1.10, 1.06, 1.15, "faster"),  # beyond the upper edge
    (0.80, 0.70, 0.90, "faster"),  # beyond the lower edge
    (1.04, 1.06, 1.15, "undecided"),  # the interval beyond, its ratio not (a bootstrap's)
])
def test_three_decisions_on_an_interval_against_the_band(ratio, low, high, expected):
    assert statistics.decision(low, high, ratio, BAND) == expected
    found, text = statistics.decided(ratio, low, high, 0.05, "PT", "TF")
    assert found == expected
    assert text == {"faster": "PT" if ratio < 1 else "TF", "equivalent": "equivalent (within 5%)",
                    "undecided": "undecided"}[expected]
    assert statistics.verdict(ratio, low, high, 0.05, "PT", "TF") == (expected == "faster", text)


def test_the_machines_own_change_widens_the_band_of_equivalence():
    assert statistics.decided(1.15, 1.12, 1.18, 0.05, "PT", "TF") == ("faster", "TF")
    assert statistics.decided(1.15, 1.12, 1.18, 0.05, "PT", "TF", shift=1.2) == (
        "equivalent", "equivalent (within 5% and the machine's own change)")


def ratio_rows(intervals, decision=True):
    """A ratio table of one pair of modes from (ratio, low, high) per point, judged as
    point_ratios judges (a low of None: no interval; a ratio of None: not compared)."""
    rows = []
    for ratio, low, high in intervals:
        found, text = (statistics.decided(ratio, low, high, 0.05, "PyTorch faster",
                                          "TensorFlow faster") if low is not None else
                       (None, statistics.TOO_FEW if ratio is not None else "not compared"))
        rows.append(dict(era="current", device="cpu", precision="fp32", task="inference",
                         method="duel", mode_pt="eager", mode_tf="eager", replicates_pt=3,
                         replicates_tf=3, interval=statistics.BETWEEN, ratio=ratio, ci_low=low,
                         ci_high=high, min_effect=0.05, disturbed=None,
                         clear=statistics.CLEAR_WORDS[None if found is None else
                                                      found == "faster"],
                         decision=found, verdict=text))
    table = pd.DataFrame(rows)
    return table if decision else table.drop(columns="decision")


INTERVALS = [(0.5, 0.45, 0.55), (0.6, 0.55, 0.65), (1.2, 1.1, 1.3), (1.0, 0.97, 1.03),
             (1.0, 0.9, 1.1), (1.02, 0.99, 1.08), (1.0, None, None), (None, None, None)]


def test_the_pair_summary_counts_each_decision():
    pair = statistics.pair_summary(ratio_rows(INTERVALS)).iloc[0]
    assert (pair["points"], pair["compared"], pair["pytorch_clearly_faster"],
            pair["tensorflow_clearly_faster"], pair["equivalent"], pair["undecided"],
            pair["decided"], pair["not_clear"]) == (8, 7, 2, 1, 1, 2, 4, 3)
    assert statistics.pair_counts(pair) == [("PyTorch faster", 2), ("TensorFlow faster", 1),
                                            ("equivalent", 1), ("undecided", 2)]


def test_a_ratio_table_or_pair_summary_written_before_the_decisions_still_reads():
    old = ratio_rows(INTERVALS, decision=False)
    assert statistics.decisions(old) == [
        "faster", "faster", "faster", "equivalent", "undecided", "undecided", None, None]
    new = statistics.pair_summary(ratio_rows(INTERVALS))
    assert statistics.pair_summary(old).equals(new)
    stored = new.drop(columns=["equivalent", "undecided", "decided"]).iloc[0]
    assert statistics.pair_counts(stored) == [("PyTorch faster", 2), ("TensorFlow faster", 1),
                                              ("not clear", 3)]


def test_timeit_points_compare_their_means(tmp_path):
    rows = point_rows("pytorch", "eager", {(1, 8): 3.0}, method="timeit") + \
        point_rows("tensorflow", "function", {(1, 8): 1.0}, method="timeit")
    path = shard.write_shard(rows, str(tmp_path / "timeit.parquet"))
    ratios = statistics.point_ratios(summary.read_shards([path]))
    assert list(ratios["statistic"]) == ["mean"] and list(ratios["clear"]) == ["yes"]
    assert ratios["ratio"].iloc[0] == rows[0]["mean"] / rows[1]["mean"]


def test_a_table_without_the_precision_column_is_grouped_as_fp32(frame):
    frame = frame.drop(columns=["precision"])  # a merged table from before that column
    assert set(statistics.point_ratios(frame)["precision"]) == {"fp32"}
    assert set(statistics.headline(frame)["precision"].dropna()) == {"fp32"}
    frame = frame.copy()
    frame["precision"] = "bf16"
    assert set(statistics.point_ratios(frame)["precision"]) == {"bf16"}


def test_the_statistics_sheet_holds_the_same_numbers(frame, tmp_path):
    path = str(tmp_path / "summary.xlsx")
    spreadsheet.write_workbook(frame, path)
    workbook = openpyxl.load_workbook(path)
    assert workbook.sheetnames.index("statistics") == workbook.sheetnames.index("ratio PT-TF") + 1
    rows = [list(row) for row in workbook["statistics"].iter_rows(values_only=True)]
    assert "bootstrap" in rows[0][0] and statistics.CLEAR_MEANING in rows[0][0]
    assert "min_effect is 5%" in rows[0][0]
    header = next(i for i, row in enumerate(rows) if row[:2] == ["era", "device"] and "verdict"
                  in row)
    records = [dict(zip(rows[header], row)) for row in rows[header + 1:] if any(row)]
    expected = statistics.point_ratios(frame)
    assert len(records) == len(expected)
    for record, (_, row) in zip(records, expected.iterrows()):
        assert record["point"] == row["point"] and record["verdict"] == row["verdict"]
        assert record["clear"] == (row["clear"] if isinstance(row["clear"], str) else None)
        assert record["decision"] == (row["decision"] if isinstance(row["decision"], str)
                                      else None)
        for name in ("ratio", "ci_low", "ci_high"):
            expected_value = None if row[name] is None or np.isnan(row[name]) else row[name]
            assert record[name] == expected_value, name  # exactly, as computed


def test_headline_is_the_2019_aggregation_beside_medians(frame):
    table = statistics.headline(frame)
    mine = table[table["source"].str.startswith("this run")].set_index(["framework", "mode"])
    ok = frame[(frame["framework"] == "pytorch") & (frame["status"] == "ok")]
    assert mine.loc[("pytorch", "eager"), "mean_s"] == pytest.approx(ok["median"].mean() / 1000)
    assert mine.loc[("pytorch", "eager"), "median_s"] == pytest.approx(
        ok["median"].median() / 1000)
    assert sorted(table[table["source"].str.contains("published")]["mean_s"]) == [
        0.043, 0.046, 0.748, 0.823]


def test_the_statistics_page_is_one_table_per_section_coloured_by_verdict(frame):
    points = summary.with_reported(frame)
    ratios = statistics.point_ratios(points)
    page = pages.statistics_page(ratios, statistics.pair_summary(ratios),
                                 statistics.headline(points), statistics.noise_table(points))
    assert page.count("<table") == 3  # pairs, headline, points (one replicate: no noise table)
    cells = re.findall(r'<td class="([^"]*)">([^<]*)</td>', page.split("<table>")[-1])
    verdicts = [(classes.split()[-1], text) for classes, text in cells if "verdict" in classes]
    assert len(verdicts) == len(ratios)
    colour = {"PyTorch faster": "pytorch", "TensorFlow faster": "tensorflow",
              "equivalent (within 5%)": "equivalent"}
    assert all(css == colour.get(text, "unclear") for css, text in verdicts)
    assert {text for _, text in verdicts} >= {"PyTorch faster", "TensorFlow faster"}
    texts = [text for _, text in cells]
    assert not {"nan", "None", "<NA>", "NaN"} & set(texts)  # missing values are empty cells
    ratio = ratios.iloc[0]["ratio"]
    assert "%.4g" % ratio in texts


def paired_points(pytorch, tensorflow):
    """Rows of a pair's points: {model: [per point: replicate figures]} for each side (each
    process ten samples at its figure)."""
    rows = []
    for model in pytorch:
        for top, bottom in zip(pytorch[model], tensorflow[model]):
            rows.append({"model": model, "replicate_figures_pt": top,
                         "replicate_figures_tf": bottom,
                         "replicate_samples_pt": [[figure] * 10 for figure in top],
                         "replicate_samples_tf": [[figure] * 10 for figure in bottom]})
    return pd.DataFrame(rows)


def test_the_geometric_mean_interval_resamples_whole_processes():
    half = paired_points({"a": [[5.0] * 3, [10.0] * 3], "b": [[1.0] * 3]},
                         {"a": [[10.0] * 3, [20.0] * 3], "b": [[2.0] * 3]})
    assert statistics.geomean_interval(half) == pytest.approx((0.5, 0.5))
    one = paired_points({"a": [[5.0]]}, {"a": [[10.0]]})
    assert statistics.geomean_interval(one) == (None, None)  # one process: nothing to resample
    # PyTorch's third process was slow at every point of its cell: a resample that draws it
    # twice or more (about 26% of them) moves every point of the cell at once, to 1.0.
    slow = paired_points({"a": [[5.0, 5.0, 10.0], [10.0, 10.0, 20.0]]},
                         {"a": [[10.0] * 3, [20.0] * 3]})
    low, high = statistics.geomean_interval(slow)
    assert low == pytest.approx(0.5) and high == pytest.approx(1.0)
