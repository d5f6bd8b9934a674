"""The published studies beside this run: the 2019 figures and CSVs (tables/published_2019.py),
and the claims (tables/published_claims.py) held era by era (verdicts/timeline.py)."""
import os

import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import era_shards, generation_shards
from duel.host.tables import summary

pytestmark = pytest.mark.unit


def test_historical_sheet_sets_published_figures_beside_this_run(tmp_path):
    from duel.host.tables import published_2019
    paths = era_shards(tmp_path)
    frame = summary.read_shards(paths)
    table = published_2019.historical_table(frame)
    published = table[table["source"].str.contains("published")]
    assert sorted(published["mean_s"]) == [0.043, 0.046, 0.748, 0.823]
    assert set(published["hardware"]) == set(published_2019.HARDWARE_2019.values())
    mine = table[~table["source"].str.contains("published")].set_index("era")
    old = [r for r in pq.read_table(paths[0]).to_pylist() if r["status"] == "ok"]
    assert mine.loc["hf2019", "mean_s"] == pytest.approx(
        sum(r["mean"] / 1000.0 for r in old) / len(old), rel=1e-12)
    assert mine.loc["hf2019", "ok_points"] == 2 and mine.loc["hf2019", "points"] == 3
    assert "Test CPU, 2 threads" == mine.loc["current", "hardware"]


def test_2019_csv_layout(tmp_path):
    from duel.host.tables import published_2019
    paths = era_shards(tmp_path)
    written = published_2019.write_2019_csvs(summary.read_shards(paths), str(tmp_path / "csv"))
    assert [os.path.basename(p) for p in written] == [
        "hf2019_cpu_pytorch_eager_inference_timeit.csv",
        "current_cpu_pytorch_eager_inference_timeit.csv"]
    lines = open(written[0]).read().splitlines()
    readme = open(str(tmp_path / "csv" / "README.txt")).read()
    assert "mean per call of every timeit.repeat sample" in readme
    assert "1 process per point" in readme
    old = pq.read_table(paths[0]).to_pylist()
    assert lines[0] == "model,1x8,1x64,2x8"
    assert lines[1] == "gpt2,%r,%r,N/A" % (old[0]["mean"] / 1000.0, old[1]["mean"] / 1000.0)


def claim_rows(frame, source):
    from duel.host.verdicts import statistics, timeline
    table = timeline.claims(frame, statistics.MIN_EFFECT)
    return [row for _, row in table.iterrows() if row["source"] == source]


def test_the_2022_generation_claims_are_held_in_each_era_that_generated(tmp_path):
    """XLA generation's claims: measured where TensorFlow xla ran (current: xla about 2.4x
    faster than eager over the whole call, but slower than PyTorch eager there), "not measured"
    in an era without it, each row saying the device and versions differ from the study's."""
    from duel.host.tables import published_claims
    rows = claim_rows(summary.read_shards(generation_shards(tmp_path)),
                      published_claims.SOURCE_2022)
    assert [(row["era"], row["claim"].split(" is ")[1][:12]) for row in rows] == [
        ("hf2023", "up to 100x f"), ("current", "up to 100x f"),
        ("hf2023", "faster than "), ("current", "faster than ")]
    over_eager, over_pytorch = rows[1], rows[3]
    for row in (rows[0], rows[2]):
        assert row["finding"] == "n/a" and "not measured in this run" in row["this_machine"]
        assert "in era hf2023" in row["this_machine"]
    # whole call per batch: eager 20 + 7 x 15 ms, xla 30 + 7 x 3 ms
    assert over_eager["finding"] == "agrees"
    assert "tensorflow xla over eager: geometric-mean speed-up 2.4" in over_eager["this_machine"]
    # PyTorch eager 10 + 7 x 5 ms against xla's 51: PyTorch faster, against the claim
    assert over_pytorch["finding"] == "disagrees"
    assert "PyTorch eager / TensorFlow xla, geometric mean 0.8" in over_pytorch["this_machine"]
    assert over_pytorch["differs"] == (
        "device: a GPU there, a CPU here; versions: transformers 4.21 (the first with XLA "
        "generation) there, torch 2.13.0, TensorFlow 2.21.0, transformers 4.31.0 here")
    # The inference claims hold no generation point.
    (old,) = [row for row in claim_rows(summary.read_shards(generation_shards(tmp_path)),
                                        published_claims.SOURCE_2019) if "usually" in row["claim"]]
    assert old["finding"] == "n/a" and "(task inference) in era hf2019" in old["this_machine"]


def test_the_generation_claims_say_not_measured_where_nothing_generated(tmp_path):
    from duel.host.tables import published_claims
    rows = claim_rows(summary.read_shards(era_shards(tmp_path)), published_claims.SOURCE_2022)
    assert len(rows) == 2
    for row in rows:
        assert pd.isna(row["era"]) and row["finding"] == "n/a"
        assert "not measured in this run" in row["this_machine"]
        assert "versions: transformers 4.21" in row["differs"] and "none measured here" in \
            row["differs"]
