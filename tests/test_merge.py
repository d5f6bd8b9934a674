"""The merge on real small shards: the table, the CSV and every sheet of the spreadsheet."""
import json

import openpyxl
import pandas as pd
import pyarrow.parquet as pq
import pytest

from duel.cell import contract, shard
from duel.host import spreadsheet, summary

POINTS = [(1, 8), (1, 64), (2, 8)]


def cell_rows(framework, mode, model, method, scale, status_of=None):
    rows = []
    for batch, length in POINTS:
        row = contract.empty_row()
        row.update(era="current", device="cpu", framework=framework, mode=mode,
                   task="inference", model=model, batch_size=batch, seq_len=length,
                   method=method, cpu_model="Test CPU", threads=2,
                   framework_version="9.9", python="3.11.7")
        status = (status_of or {}).get((batch, length), "ok")
        row["status"] = status
        if status == "ok":
            samples = [scale * batch * length / 3.0 + i / 7.0 for i in range(5)]
            row.update(samples=samples, n_samples=5, median=samples[2],
                       mean=sum(samples) / 5.0 + 0.001, min=samples[0], max=samples[-1])
        else:
            row["message"] = "RuntimeError: injected"
        rows.append(row)
    return rows


@pytest.fixture
def shards(tmp_path):
    paths = []
    specs = [
        ("pytorch", "eager", "gpt2", "duel", 1.0, None),
        ("tensorflow", "eager", "gpt2", "duel", 2.0, {(1, 64): "oom"}),
        ("pytorch", "eager", "bert", "duel", 3.0, {(2, 8): "skipped"}),
        ("tensorflow", "eager", "bert", "duel", 4.0, None),
        ("pytorch", "eager", "distilgpt2", "hf2019", 5.0, None),
    ]
    for index, spec in enumerate(specs):
        path = str(tmp_path / ("shard-%d.parquet" % index))
        shard.write_shard(cell_rows(*spec), path)
        paths.append(path)
    return paths


def test_merged_table_holds_every_row_of_every_shard(shards, tmp_path):
    frame = summary.read_shards(shards)
    assert len(frame) == 5 * len(POINTS)
    assert list(frame.columns) == contract.NAMES
    summary.write_outputs(frame, str(tmp_path / "s.parquet"), str(tmp_path / "s.csv"))
    back = pq.read_table(str(tmp_path / "s.parquet")).to_pandas()
    original = pq.read_table(shards[0]).to_pylist()
    assert list(back["samples"].iloc[0]) == original[0]["samples"]
    csv = pd.read_csv(str(tmp_path / "s.csv"))
    assert json.loads(csv["samples"].iloc[0]) == original[0]["samples"]
    assert csv["median"].iloc[0] == original[0]["median"]


def test_a_shard_missing_a_newer_column_is_read_with_nulls(tmp_path):
    path = str(tmp_path / "old.parquet")
    shard.write_shard(cell_rows("pytorch", "eager", "gpt2", "duel", 1.0), path)
    table = pq.read_table(path).drop(["p90"])
    pq.write_table(table, path)
    frame = summary.read_shards([path])
    assert frame["p90"].isna().all() and list(frame.columns) == contract.NAMES


def sheet_rows(workbook, name):
    return [list(row) for row in workbook[name].iter_rows(values_only=True)]


def test_spreadsheet_sheets_layout_and_exact_values(shards, tmp_path):
    path = str(tmp_path / "summary.xlsx")
    frame = summary.read_shards(shards)
    spreadsheet.write_workbook(frame, path)
    workbook = openpyxl.load_workbook(path)
    assert workbook.sheetnames == [
        "about", "long", "current cpu PT eager duel", "current cpu TF eager duel",
        "current cpu PT eager hf2019", "ratio PT-TF", "environment"]

    long_rows = sheet_rows(workbook, "long")
    assert long_rows[0][: len(contract.NAMES)] == contract.NAMES
    by_key = {}
    for row in long_rows[1:]:
        record = dict(zip(long_rows[0], row))
        by_key[(record["framework"], record["model"], record["method"], record["batch_size"],
                record["seq_len"])] = record
    for source in shards:
        for row in pq.read_table(source).to_pylist():
            record = by_key[(row["framework"], row["model"], row["method"], row["batch_size"],
                             row["seq_len"])]
            assert record["status"] == row["status"]
            assert record["median"] == row["median"]  # to the last digit stored
            assert record["mean"] == row["mean"]
            if row["samples"] is not None:
                assert json.loads(record["samples"]) == row["samples"]

    layout = sheet_rows(workbook, "current cpu TF eager duel")
    assert layout[2] == ["model", "1x8", "1x64", "2x8"]
    gpt2 = pq.read_table(shards[1]).to_pylist()
    assert layout[3] == ["gpt2", gpt2[0]["median"] / 1000.0, "N/A", gpt2[2]["median"] / 1000.0]
    assert "median" in layout[1][0] and "Test CPU" in layout[1][0]

    pt_hf = sheet_rows(workbook, "current cpu PT eager hf2019")
    hf_rows = pq.read_table(shards[4]).to_pylist()
    assert pt_hf[3][1] == hf_rows[0]["mean"] / 1000.0  # hf2019 reports its mean, as 2019

    ratios = sheet_rows(workbook, "ratio PT-TF")
    bert = next(row for row in ratios if row[0] == "bert")
    pt_bert, tf_bert = (pq.read_table(shards[i]).to_pylist() for i in (2, 3))
    assert bert[1] == pt_bert[0]["median"] / tf_bert[0]["median"]
    assert bert[3] == "N/A"  # PyTorch point skipped

    environment = sheet_rows(workbook, "environment")
    assert len([row for row in environment[1:] if any(row)]) == 5  # one row per cell
