"""The harness benchmark (benchmarks/harness.py) in its quick mode: it runs, end to end.

Its figures are for the README (full mode, a quiet machine); here only that every part
measures something sensible, so the benchmark cannot rot unnoticed.
"""
import json
import os
import subprocess
import sys

from conftest import REPO


def test_the_harness_benchmark_runs_in_quick_mode(tmp_path):
    output = str(tmp_path / "harness.json")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "harness.py"), "--quick",
         "--output", output], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output) as handle:
        report = json.load(handle)
    assert report["mode"] == "quick"
    overhead = report["overhead"]
    assert 0 < overhead["noop_bare_us"] and 0 < overhead["noop_duel_us"] < 100
    assert 1.0 <= overhead["busy_duel_ms"] < 2.0  # a call of 1 ms by construction
    (agreement,) = report["agreement"]
    assert agreement["model"] == "tiny-bert-16pos" and agreement["threads"] >= 1
    for method in ("duel", "timer", "bare"):
        assert len(agreement["rounds_ms"][method]) == 2
        assert all(value > 0 for value in agreement["rounds_ms"][method])
    (repeat,) = report["repeatability"]
    assert repeat["framework"] == "pytorch" and min(repeat["median_ms"]) > 0
    assert repeat["second_over_first"] == repeat["median_ms"][1] / repeat["median_ms"][0]
    table = result.stdout
    assert "| 1 | duel's median of a 1 ms busy-wait" in table and "duel/Timer" in table
    assert "load average" in table
