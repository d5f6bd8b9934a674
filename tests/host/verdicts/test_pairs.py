"""Pairs of points (verdicts/pairs.py): between modes on real small shards, between frameworks
from the names a run has."""
import numpy as np
import pandas as pd
import pytest

from conftest import POINTS, synthetic_rows
from duel.cell import frameworks
from duel.host.render import outcome
from duel.host.tables import summary
from duel.host.verdicts import pairs, settle, statistics

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


def three_frameworks(monkeypatch):
    """A point table of PyTorch, TensorFlow and a third framework, JAX, registered for the test
    only (nothing of it installed): JAX's rows are TensorFlow's, twice as slow."""
    monkeypatch.setitem(frameworks.FRAMEWORKS, "jax", frameworks.Framework(
        "jax", "JAX", "jx", "jax", "Flax", None, {}))
    rows = synthetic_rows(replicates=3, seed=3, slow={("pytorch", 1, 8): 0.5})
    jax = [dict(row, framework="jax", mode="jit", samples=[2 * value for value in row["samples"]],
                median=2 * row["median"], mean=2 * row["mean"])
           for row in rows if row["framework"] == "tensorflow"]
    return summary.with_reported(pd.DataFrame(rows + jax))


def test_a_third_framework_pairs_with_each_of_the_others(monkeypatch, tmp_path):
    points = three_frameworks(monkeypatch)
    found = pairs.framework_pairs(["tensorflow", "jax", "pytorch"])  # the registry's order
    assert [(pair.frameworks, pair.suffixes) for pair in found] == [
        (("pytorch", "tensorflow"), ("_pt", "_tf")), (("pytorch", "jax"), ("_pt", "_jx")),
        (("tensorflow", "jax"), ("_tf", "_jx"))]
    assert found[0] == pairs.SHOWN
    with pytest.raises(ValueError, match="no framework of that name: mxnet"):
        pairs.framework_pairs(["pytorch", "mxnet"])

    ratios = statistics.point_ratios(points)
    by_pair = dict((pair.frameworks, rows) for pair, rows in pairs.in_table(ratios))
    assert list(by_pair) == [pair.frameworks for pair in found]
    assert all(len(rows) == 5 for rows in by_pair.values())  # every point of each pair
    assert len(pairs.shown(ratios)) == 5
    jax_rows = by_pair[("tensorflow", "jax")]
    assert list(jax_rows["mode_jx"].unique()) == ["jit"] and jax_rows["mode_pt"].isna().all()
    assert np.allclose(jax_rows["ratio"], 0.5)  # TensorFlow's times / twice them
    assert set(jax_rows["verdict"]) == {"TensorFlow faster"}
    assert (jax_rows["tensorflow_ms"] * 2 == jax_rows["jax_ms"]).all()
    assert set(by_pair[("pytorch", "jax")]["verdict"]) == {"PyTorch faster"}
    assert pairs.of_row(jax_rows.iloc[0]) == found[2]

    summaries = statistics.pair_summary(ratios, points)
    judged = dict((pair.frameworks, rows.iloc[0]) for pair, rows in pairs.in_table(summaries))
    assert judged[("tensorflow", "jax")]["tensorflow_clearly_faster"] == 5
    assert judged[("tensorflow", "jax")]["jax_clearly_faster"] == 0
    assert judged[("pytorch", "jax")]["pytorch_clearly_faster"] == 5
    assert statistics.geomean_winner(judged[("tensorflow", "jax")], 0.05, found[2]) == \
        "tensorflow"

    statistics_folder = tmp_path / "statistics"  # duel show's lines, from the files written
    statistics_folder.mkdir()
    ratios.to_csv(str(statistics_folder / "ratios.csv"), index=False)
    summaries.to_csv(str(statistics_folder / "pairs.csv"), index=False)
    lines = outcome.verdict_lines(str(tmp_path))
    assert [line for line in lines if line.startswith("Verdict")] == [
        "Verdict (PyTorch time / TensorFlow time; < 1: PyTorch faster):",
        "Verdict (PyTorch time / JAX time; < 1: PyTorch faster):",
        "Verdict (TensorFlow time / JAX time; < 1: TensorFlow faster):"]
    assert "  TensorFlow function vs JAX jit (current cpu fp32 inference duel):" in lines
    assert "    of 5 points: TensorFlow faster 5, JAX faster 0, equivalent 0, undecided 0" \
        in lines

    wanted = settle.cells_to_extend(jax_rows.assign(processes=4).head(1))
    assert [(cell["framework"], cell["mode"]) for cell in wanted] == [
        ("jax", "jit"), ("tensorflow", "function")]
