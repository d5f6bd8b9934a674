"""Settling: the interval between processes (Welch's t), which verdicts are still open after the
first rounds, and a real run whose open points run again in more processes, only those."""
import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import QUICK, pooled_figure, shard_file, snakemake, synthetic_rows, write_config
from duel.host.plan import layout
from duel.host.tables import summary
from duel.host.verdicts import pairs, settle, statistics


@pytest.mark.unit
def test_the_interval_between_processes_is_welchs_t_on_their_log_figures():
    top, bottom = [1.00, 1.10, 0.95], [1.00, 1.02, 1.05]
    a, b = np.log(top), np.log(bottom)
    va, vb = a.var(ddof=1) / 3, b.var(ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    assert 2 <= df < 3  # so t is the quantile of 2 degrees of freedom, rounded down
    for t, confidence in ((4.303, 0.95), (2.920, 0.90)):
        half = t * np.sqrt(va + vb)
        low, high = statistics.welch_ratio(top, bottom, 1.0, confidence)
        assert (low, high) == pytest.approx((np.exp(-half), np.exp(half)), rel=1e-4)
    assert statistics.welch_ratio([1.0], bottom, 1.0) is None  # one process: no t interval


@pytest.mark.unit
def test_the_judge_uses_welchs_t_with_several_processes_and_a_bootstrap_with_one():
    rng = np.random.default_rng(3)
    processes = lambda levels: [level * np.exp(0.01 * rng.standard_normal(30)) for level in levels]
    top, bottom = processes([1.00, 1.10, 0.95]), processes([1.00, 1.02, 1.05])
    side = lambda groups: pairs.Side("ok", pooled_figure(groups), 30 * len(groups),
                                     groups)
    judged = statistics.judge(side(top), side(bottom), "median", 0.05, "top", "bottom")
    expected = statistics.welch_ratio(statistics.replicate_figures(top, "median"),
                                      statistics.replicate_figures(bottom, "median"),
                                      judged.ratio)
    assert (judged.ci_low, judged.ci_high) == pytest.approx(expected)
    # The bootstrap over three processes is narrower than t: the interval that a rerun missed.
    low, high = statistics.bootstrap_ratio(top, bottom)
    assert high - low < judged.ci_high - judged.ci_low
    one = statistics.judge(side(top[:1]), side(bottom[:1]), "median", 0.05, "top", "bottom")
    assert (one.ci_low, one.ci_high) == statistics.bootstrap_ratio(top[:1], bottom[:1])


@pytest.mark.unit
@pytest.mark.parametrize("low, high, expected", [
    (0.90, 0.97, True),    # across 1 / 1.05
    (1.02, 1.10, True),    # across 1.05
    (0.90, 1.10, True),    # across both
    (0.96, 1.04, False),   # inside the band: settled, no difference of 5% or more
    (0.80, 0.94, False),   # below it: clear
    (1.06, 1.20, False),   # above it: clear
    (None, None, False),   # no interval: more processes would not give one
])
def test_a_verdict_is_open_when_its_interval_reaches_across_an_edge_of_the_band(low, high,
                                                                                expected):
    assert settle.is_open(low, high, 0.05) is expected


@pytest.mark.unit
def test_the_plan_sends_each_decidable_open_point_to_both_of_its_cells_and_nothing_else():
    # PyTorch at half TensorFlow's time at 1x8 (decided), at 0.88 of it at 2x8, the same
    # elsewhere with 4% between processes: those intervals reach across the band's edges.
    rows = synthetic_rows(replicates=3, seed=7, between=0.04,
                          slow={("pytorch", 1, 8): 0.5, ("pytorch", 2, 8): 0.88})
    record = settle.plan(summary.with_reported(pd.DataFrame(rows)), 3, 6, 0.05,
                         long_frame=pd.DataFrame(rows))
    opened = dict(("%dx%d" % (entry["batch_size"], entry["seq_len"]), entry["processes"])
                  for entry in record["open"])
    # 2x8 can still be shown faster; the others sit at the band's edge (ratios 1.04-1.05 with
    # 4% between processes): six processes would not decide them, so they stop now
    assert opened == {"1x128": None, "2x8": 6, "2x128": None, "4x32": None}
    assert [(cell["framework"], cell["mode"]) for cell in record["cells"]] == \
        [("pytorch", "eager"), ("tensorflow", "function")]
    assert all(cell["points"] == ["2x8:duel"] and 0.05 <= cell["noise_ratio"] <= 20
               for cell in record["cells"])
    extra = settle.extra_cells(record)
    assert sorted({cell.replicate for cell, _ in extra}) == [4, 5, 6]
    assert len(extra) == 2 * 3
    cell = extra[0][0]
    assert settle.cell_arguments(record, cell)[:2] == ["--points", "2x8:duel"]
    assert settle.cell_arguments(record, cell)[2] == "--noise-ratio"
    assert settle.lines(record) == [
        "Settling: 4 verdict(s) undecided after 3 processes per cell; 1 ran again in "
        "processes 4-6 of 2 cells; 3 stopped: 6 processes would not decide them."]
    # Processes that agree within 0.5%: every interval inside the band or beyond it, none open.
    quiet = synthetic_rows(replicates=3, seed=7, between=0.005, slow={("pytorch", 1, 8): 0.5})
    record = settle.plan(summary.with_reported(pd.DataFrame(quiet)), 3, 6, 0.05)
    assert record["open"] == [] and record["cells"] == [] and settle.lines(record) == []


@pytest.mark.unit
def test_the_open_points_of_modes_that_share_a_process_run_in_one():
    """TensorFlow eager and function share a process: a settling round measures both modes'
    open points there, each point naming its mode, with the larger noise ratio of the two."""
    def cell(mode, points, processes, ratio):
        return dict(era="current", device="cpu", framework="tensorflow", mode=mode,
                    precision="fp32", task="inference", model="m", points=points,
                    processes=dict((point, processes) for point in points), noise_ratio=ratio)
    record = {"replicates": 3, "max_replicates": 6, "cells": [
        cell("eager", ["1x8:duel"], 4, 0.5), cell("function", ["2x8:duel"], 5, 2.0)]}
    extra = [(cell.mode, cell.replicate, points) for cell, points in settle.extra_cells(record)]
    assert extra == [("eager+function", 4, ["eager:1x8:duel", "function:2x8:duel"]),
                     ("function", 5, ["2x8:duel"])]
    first = settle.extra_cells(record)[0][0]
    assert settle.cell_arguments(record, first) == [
        "--points", "eager:1x8:duel,function:2x8:duel", "--noise-ratio", "2"]


@pytest.mark.unit
def test_a_point_gets_the_processes_that_make_a_decision_likely_and_none_when_futile():
    def point(ratio, low, high, processes=3):
        return {"mode_pt": "eager", "mode_tf": "eager", "ratio": ratio, "ci_low": low,
                "ci_high": high, "replicates_pt": processes, "replicates_tf": processes}

    # 0.90 [0.84, 0.965]: a tenth faster, just not shown yet: one process more
    assert settle.needed(point(0.90, 0.84, 0.965), 6, 0.05) == 4
    # the same ratio with processes twice as far apart wants all six
    assert settle.needed(point(0.90, 0.80, 1.01), 6, 0.05) == 6
    # 1.00 [0.94, 1.065]: no difference, nearly shown to be within 5%: equivalent is in reach
    assert settle.needed(point(1.00, 0.94, 1.065), 6, 0.05) is not None
    # at the band's edge with processes 8% apart: six processes would decide it rarely
    assert settle.needed(point(1.05, 0.90, 1.22), 6, 0.05) is None
    # two processes more are not one more: the chance to decide grows with the processes
    chances = [settle.chance_to_decide(np.log(0.9), 0.06, 3, count, 0.05)
               for count in (4, 6, 10)]
    assert chances == sorted(chances) and 0.0 <= chances[0] and chances[-1] <= 1.0
    assert settle.needed(point(0.90, 0.84, 0.965), 3, 0.05) is None  # no process to add


@pytest.mark.workflow
@pytest.mark.framework
def test_a_real_run_measures_its_open_points_again_in_more_processes_and_only_those(tmp_path):
    """DistilBERT, two processes per cell and at most three: after the first two rounds the
    open verdicts' points run in a third process of both their cells, the merged table pools
    three processes there and two elsewhere, and the run's end says so."""
    config = write_config(tmp_path, **dict(QUICK, models=["distilbert-base-uncased"],
                                           batch_sizes=[1], sequence_lengths=[8, 16],
                                           replicates=2, max_replicates=3))
    result = snakemake(tmp_path, "--cores", "2", "--configfile", config)
    record = settle.read(os.path.join(str(tmp_path), "results", layout.OPEN_POINTS))
    assert (record["replicates"], record["max_replicates"]) == (2, 3)
    # Two processes a side give Welch's t 2 degrees of freedom or fewer (t of 4.3 or more):
    # on two cores some PyTorch eager / TensorFlow verdict of these near-equal shapes is open.
    assert record["open"], "no verdict open after two processes: nothing to settle"
    planned = {(cell["framework"], cell["mode"]): cell["points"] for cell in record["cells"]}
    futile = [entry for entry in record["open"] if entry["processes"] is None]
    assert len(futile) + sum(1 for entry in record["open"] if entry["processes"] == 3) \
        == len(record["open"])
    for framework, mode in (("pytorch", "eager"), ("tensorflow", "eager"),
                            ("tensorflow", "function")):
        third = shard_file(tmp_path, framework, mode, "distilbert-base-uncased", replicate=3)
        if (framework, mode) not in planned:
            assert not os.path.exists(third)
            continue
        rows = pq.read_table(third).to_pandas()
        rows = rows[rows["mode"] == mode]  # a process of eager+function keeps both modes' rows
        measured = sorted("%dx%d:%s" % point for point in
                          zip(rows["batch_size"], rows["seq_len"], rows["method"]))
        assert measured == sorted(planned[(framework, mode)])
    points = summary.with_reported(summary.read_summary(
        os.path.join(str(tmp_path), "results", "summary.parquet")))
    for _, point in points.iterrows():
        key = "%dx%d:%s" % (point["batch_size"], point["seq_len"], point["method"])
        expected = 3 if key in planned.get((point["framework"], point["mode"]), []) else 2
        assert point["replicates"] == expected, point[["framework", "mode", "point"]].tolist()
    assert "Settling: %d verdict(s) undecided after 2 processes per cell" \
        % len(record["open"]) in result.stderr
    manifests = [json.load(open(os.path.join(folder, "manifest.json")))
                 for folder in (tmp_path / "results" / "runs").iterdir()]
    assert all(os.path.exists(tmp_path / shard) for shard in manifests[0]["shards"])
    assert any("/r3.parquet" in shard for shard in manifests[0]["shards"]) == bool(planned)
