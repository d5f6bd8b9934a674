"""A quick check of the harness benchmark's code (benchmarks/harness.py), so it cannot rot.

The benchmark itself is run on demand (benchmarks/results/2026-11-29-harness.md; `--quick` in about a
minute and a half on a loaded 2-core machine, the full mode about 6 minutes), not by the suite.
Here: part 1 for real with few samples; part 2 for real on the tiny BERT, two short rounds (marked
framework: it imports torch); part 3's pairing with a stand-in for its two `run_cell.py`
processes (those run for real in tests/cell/test_reference.py and tests/features/test_workflow.py);
the table and its Disturbed flag on the report those parts make.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

HARNESS = os.path.join(REPO, "benchmarks")
# benchmarks/harness.py is a script, not part of the package: loaded from its file.
_SPEC = importlib.util.spec_from_file_location("harness", os.path.join(HARNESS, "harness.py"))
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)

LITTLE = dict(harness.QUICK, overhead_samples=200, busy_samples=10, rounds=2, min_time_s=0.02)


def agreement_row(spread):
    """A part-2 row as measure_agreement makes it, rounds ``spread`` apart."""
    rounds = {"duel": [10.0, 10.0 * (1 + spread)], "timer": [10.1, 10.1], "bare": [9.9, 9.9]}
    return {"model": "tiny-bert-16pos", "batch_size": 1, "seq_len": 8, "threads": 2,
            "block_s": 0.1, "rounds_ms": rounds,
            "median_ms": {"duel": 10.0, "timer": 10.1, "bare": 9.9},
            "duel_over_timer": 0.99, "duel_over_bare": 1.01,
            "round_spread": {"duel": spread, "timer": 0.0, "bare": 0.0},
            "load_before": {"load_1min": 0.2, "cpus": 2}, "load_after": {"load_1min": 0.3}}


def report_of(overhead, agreement, repeatability):
    return {"mode": "quick", "threads": 2, "overhead": overhead, "agreement": agreement,
            "repeatability": repeatability, "finished_at": "2026-12-01 07:00 UTC"}


@pytest.fixture(scope="module")
def overhead():
    return harness.measure_overhead(LITTLE)


@pytest.mark.unit
def test_part_1_measures_what_duel_adds_to_a_sample(overhead):
    assert 0 < overhead["noop_bare_us"] and 0 < overhead["noop_duel_us"] < 100
    assert 1.0 <= overhead["busy_duel_ms"] < 2.0  # a call of 1 ms by construction
    assert overhead["busy_duel_overhead_share"] == overhead["busy_duel_ms"] / 1.0 - 1.0


@pytest.mark.unit
def test_part_3_pairs_the_two_runs_point_by_point(monkeypatch):
    medians = {1: {8: 4.0, 128: 8.0}, 2: {8: 5.0, 128: 8.0}}
    calls = []

    def stand_in(cell, framework, mode, output, threads):
        run = int(output[-len("1.parquet")])
        calls.append((framework, mode, run, threads))
        return [{"model": "tiny", "status": "ok", "message": None, "batch_size": 1,
                 "seq_len": length, "median": median, "n_samples": 10}
                for length, median in sorted(medians[run].items())]

    monkeypatch.setattr(harness, "run_cell_once", stand_in)
    rows = harness.measure_repeatability(harness.QUICK, 2)
    assert calls == [("pytorch", "eager", 1, 2), ("pytorch", "eager", 2, 2)]
    assert [(row["seq_len"], row["median_ms"], row["second_over_first"]) for row in rows] == [
        (8, [4.0, 5.0], 1.25), (128, [8.0, 8.0], 1.0)]


@pytest.mark.unit
def test_the_table_flags_a_disturbed_run_and_the_report_is_json(overhead):
    quiet = dict(overhead, load_before={"load_1min": 0.1, "cpus": 2},
                 load_after={"load_1min": 0.1, "cpus": 2})
    repeat = {"model": "tiny", "framework": "pytorch", "mode": "eager", "batch_size": 1,
              "seq_len": 8, "median_ms": [4.0, 5.0], "n_samples": [10, 10],
              "second_over_first": 1.25, "load_before": {"load_1min": 0.2, "cpus": 2},
              "load_after": {"load_1min": 0.2}}
    calm = harness.markdown(report_of(quiet, [agreement_row(0.02)], [repeat]))
    assert "| 1 | duel's median of a 1 ms busy-wait" in calm and "duel/Timer -1.00%" in calm
    assert "| 3 | tiny pytorch eager 1x8 run twice: 4.00 ms, 5.00 ms | second/first +25.00%" \
        in calm
    assert "Disturbed" not in calm and "load average during the run 0.10-0.20" in calm
    assert "**Disturbed**" in harness.markdown(report_of(quiet, [agreement_row(0.5)], [repeat]))
    json.dumps(report_of(quiet, [agreement_row(0.02)], [repeat]))


@pytest.mark.framework
def test_part_2_times_a_real_model_three_ways():
    # its own process: part 2 sets the framework's environment variables (run_cell.py's)
    code = ("import json, sys; import harness; "
            "print(json.dumps(harness.measure_agreement(json.loads(sys.argv[1]), 1)))")
    output = subprocess.check_output([sys.executable, "-c", code, json.dumps(LITTLE)],
                                     text=True, timeout=600, env=dict(os.environ, PYTHONPATH=HARNESS))
    (row,) = json.loads(output.strip().splitlines()[-1])
    assert row["model"] == "tiny-bert-16pos" and row["threads"] == 1
    for method in ("duel", "timer", "bare"):
        assert len(row["rounds_ms"][method]) == 2
        assert all(value > 0 for value in row["rounds_ms"][method])
    assert 0.2 < row["duel_over_timer"] < 5 and 0.2 < row["duel_over_bare"] < 5
