"""The spreadsheet (render/spreadsheet.py) from real small shards: every sheet, exact values."""
import json

import openpyxl
import pyarrow.parquet as pq
import pytest

from conftest import era_shards, generation_shards
from duel.cell import contract
from duel.host.render import spreadsheet
from duel.host.tables import summary

pytestmark = pytest.mark.unit


def sheet_rows(workbook, name):
    return [list(row) for row in workbook[name].iter_rows(values_only=True)]


def test_spreadsheet_sheets_layout_and_exact_values(shards, tmp_path):
    path = str(tmp_path / "summary.xlsx")
    frame = summary.read_shards(shards)
    spreadsheet.write_workbook(frame, path)
    workbook = openpyxl.load_workbook(path)
    assert workbook.sheetnames == [
        "about", "long", "current cpu PT eager duel", "current cpu TF eager duel",
        "current cpu PT eager timeit", "current cpu PT jit duel", "ratio PT-TF", "statistics", "noise",
        "mode speed-up", "GFLOP per s", "cross-era", "timeline", "deployment", "historical 2019",
        "environment", "time", "columns"]
    columns = sheet_rows(workbook, "columns")
    assert [row[1] for row in columns[1:]] == contract.NAMES
    assert columns[1 + contract.NAMES.index("peak_host_rss_mb")][2:4] == [
        "MiB", contract.POOLS[contract.LARGEST]]

    long_rows = sheet_rows(workbook, "long")
    assert long_rows[0][: len(contract.NAMES)] == contract.NAMES
    by_key = {}
    for row in long_rows[1:]:
        record = dict(zip(long_rows[0], row))
        by_key[(record["framework"], record["mode"], record["model"], record["method"],
                record["batch_size"], record["seq_len"])] = record
    for source in shards:
        for row in pq.read_table(source).to_pylist():
            record = by_key[(row["framework"], row["mode"], row["model"], row["method"],
                             row["batch_size"], row["seq_len"])]
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

    pt_hf = sheet_rows(workbook, "current cpu PT eager timeit")
    hf_rows = pq.read_table(shards[4]).to_pylist()
    assert pt_hf[3][1] == hf_rows[0]["mean"] / 1000.0  # timeit reports its mean, as 2019

    ratios = sheet_rows(workbook, "ratio PT-TF")
    bert = next(row for row in ratios if row[0] == "bert")
    pt_bert, tf_bert = (pq.read_table(shards[i]).to_pylist() for i in (2, 3))
    assert bert[1] == pt_bert[0]["median"] / tf_bert[0]["median"]
    assert bert[3] == "N/A"  # PyTorch point skipped

    stats = sheet_rows(workbook, "statistics")
    tables = [index for index, row in enumerate(stats) if row[:2] == ["era", "device"]]
    pairs, points = ([dict(zip(stats[start], row)) for row in stats[start + 1:end] if any(row)]
                     for start, end in zip(tables, tables[1:] + [len(stats)]))
    assert pairs and points
    for pair in pairs:  # each compared and judged point counted once, by its decision
        assert pair["decided"] == (pair["pytorch_clearly_faster"]
                                   + pair["tensorflow_clearly_faster"] + pair["equivalent"])
        assert pair["not_clear"] == pair["equivalent"] + pair["undecided"]
    assert {point["decision"] for point in points} <= {"faster", "equivalent", "undecided", None}
    assert all((point["decision"] == "faster") == (point["clear"] == "yes") for point in points)
    about = " ".join(str(cell) for row in sheet_rows(workbook, "about") for cell in row if cell)
    assert "'equivalent'" in about and "'undecided'" in about

    speedups = sheet_rows(workbook, "mode speed-up")
    assert "pytorch torchscript over eager, fp32" in speedups[2][0]
    assert speedups[3] == ["model", "1x8", "1x64", "2x8"]
    eager, traced = (pq.read_table(shards[i]).to_pylist() for i in (0, 5))
    assert speedups[4] == ["gpt2", eager[0]["median"] / traced[0]["median"], "N/A",
                           eager[2]["median"] / traced[2]["median"]]

    gflops = sheet_rows(workbook, "GFLOP per s")
    # 2 threads x 2.0 GHz x 32 FLOP/cycle (AVX2 + FMA)
    assert gflops[3][0].startswith("nominal peak: 128.0 GFLOP/s (2 threads x 2.00 GHz x 32")
    assert gflops[5][:2] == ["gpt2", 16.0]
    percent = gflops.index(["% of nominal peak"] + [None] * (len(gflops[5]) - 1))
    assert gflops[percent + 2][:2] == ["gpt2", 12.5]

    environment = sheet_rows(workbook, "environment")
    blank = next(index for index, row in enumerate(environment) if not any(row))
    assert blank == 1 + 6  # a header, one row per cell, then the software stacks
    assert environment[blank + 1][0].startswith("software stacks")
    header, stacks = environment[blank + 2], environment[blank + 3:]
    rows = [dict(zip(header, row)) for row in stacks]
    assert [(row["installed_sha256"][0], row["lock_match"], row["drift_accepted"], row["shards"])
            for row in rows] == [("a", True, False, 4), ("b", False, True, 2)]


def test_cross_era_pairs_the_same_cell_and_point(tmp_path):
    old, new = (pq.read_table(p).to_pylist() for p in era_shards(tmp_path))
    frame = summary.read_shards(era_shards(tmp_path))
    path = str(tmp_path / "summary.xlsx")
    spreadsheet.write_workbook(frame, path)
    rows = sheet_rows(openpyxl.load_workbook(path), "cross-era")
    header = next(i for i, row in enumerate(rows) if row[0] == "model")
    assert "2.13.0 / 1.3.0" in rows[header - 1][0]
    assert rows[header][:4] == ["model", "1x8", "1x64", "2x8"]
    gpt2 = rows[header + 1]
    assert gpt2[0] == "gpt2"
    assert gpt2[1] == new[0]["mean"] / old[0]["mean"]  # timeit reports the mean
    assert gpt2[2] == new[1]["mean"] / old[1]["mean"]
    assert gpt2[3] == "N/A"  # the 2019-era point ran out of memory
    timeline = sheet_rows(openpyxl.load_workbook(path), "timeline")
    header = next(row for row in timeline if row[:2] == ["era_new", "era_old"])
    speedups = [dict(zip(header, row)) for row in timeline[timeline.index(header) + 1:]
                if row[0] == "current"]
    assert [(row["decision"], row["verdict"]) for row in speedups] == [
        ("faster", "faster today"), ("faster", "faster today"), (None, "not ok in an era")]


def test_the_timeline_shows_generation_ratios_per_era(tmp_path):
    """Per era, oldest first, with its date and versions: PyTorch / TensorFlow time to first
    token (about 1/2) and time per output token (1/3) of each pair of modes; and the XLA
    generation claims held in each era."""
    path = str(tmp_path / "summary.xlsx")
    spreadsheet.write_workbook(summary.read_shards(generation_shards(tmp_path)), path)
    timeline = sheet_rows(openpyxl.load_workbook(path), "timeline")
    header = next(row for row in timeline if "first_token_ratio" in row)
    table = [dict(zip(header, row)) for row in timeline[timeline.index(header) + 1:]]
    table = table[:next(index for index, row in enumerate(table) if not any(row.values()))]
    assert [(row["era"], row["era_date"], row["mode_pt"], row["mode_tf"]) for row in table] == [
        ("hf2023", "2023-07-25", "eager", "eager"), ("current", "2026-11-29", "eager", "eager"),
        ("current", "2026-11-29", "eager", "xla")]
    assert table[0]["versions"] == "torch 2.0.1, TensorFlow 2.13.0, transformers 4.31.0"
    for row in table[:2]:
        assert row["points"] == 2 and row["replicates"] == 3
        assert row["first_token_ratio"] == pytest.approx(0.5, rel=0.01)
        assert row["per_token_ratio"] == pytest.approx(1 / 3.0, rel=1e-9)
        assert row["per_token_decision"] == "PyTorch faster"
    assert table[2]["per_token_ratio"] == pytest.approx(5 / 3.0, rel=1e-9)
    assert table[2]["per_token_decision"] == "TensorFlow faster"
    claims = [row for row in timeline if row[0] and "Faster Text Generation" in str(row[0])]
    assert [row[1] for row in claims] == ["hf2023", "current", "hf2023", "current"]
