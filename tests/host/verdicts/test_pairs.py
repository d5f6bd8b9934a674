"""Comparisons between modes (verdicts/pairs.py) on real small shards."""
import pandas as pd
import pytest

from conftest import POINTS
from duel.host.tables import summary
from duel.host.verdicts import pairs

pytestmark = pytest.mark.unit


def test_mode_speedups_say_why_a_ratio_is_missing(shards):
    speedups = pairs.mode_speedups(summary.read_shards(shards))
    rows = {(row["model"], row["point"]): row for _, row in speedups.iterrows()}
    assert set(speedups["mode"]) == {"torchscript"} and len(rows) == len(POINTS)
    assert rows[("gpt2", "1x64")]["status"] == "error" and pd.isna(rows[("gpt2", "1x64")]["ratio"])
    for point in ("1x8", "2x8"):
        row = rows[("gpt2", point)]
        assert row["status"] == "ok" and row["ratio"] == row["reported_ms_eager"] / \
            row["reported_ms_torchscript"] > 1
