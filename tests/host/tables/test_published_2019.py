"""The published 2019 study (tables/published_2019.py): its figures beside this run's, the 2019 CSVs."""
import os

import pyarrow.parquet as pq
import pytest

from conftest import era_shards
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
