"""The merge on real small shards: the table, the CSV and every sheet of the spreadsheet."""
import json
import os
import subprocess
import sys

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SCRIPTS
from duel.cell import contract, shard
from duel.host.render import outcome, spreadsheet
from duel.host.tables import summary
from duel.host.verdicts import comparisons

pytestmark = pytest.mark.unit

POINTS = [(1, 8), (1, 64), (2, 8)]


def cell_rows(framework, mode, model, method, scale, status_of=None):
    rows = []
    for batch, length in POINTS:
        row = contract.empty_row()
        row.update(era="current", device="cpu", framework=framework, mode=mode,
                   precision="fp32", task="inference", model=model, batch_size=batch,
                   seq_len=length, method=method, cpu_model="Test CPU", threads=2,
                   cpu_flags="avx2,fma,avx", cpu_max_mhz=2000.0,
                   framework_version="9.9", python="3.11.7")
        status = (status_of or {}).get((batch, length), "ok")
        row["status"] = status
        if status == "ok":
            samples = [scale * batch * length / 3.0 + i / 7.0 for i in range(5)]
            row.update(samples=samples, n_samples=5, median=samples[2],
                       mean=sum(samples) / 5.0 + 0.001, min=samples[0], max=samples[-1],
                       achieved_gflops=16.0 * batch)
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
        ("pytorch", "eager", "distilgpt2", "timeit", 5.0, None),
        ("pytorch", "torchscript", "gpt2", "duel", 0.5, {(1, 64): "error"}),
    ]
    for index, spec in enumerate(specs):
        path = str(tmp_path / ("shard-%d.parquet" % index))
        rows = cell_rows(*spec)
        for row in rows:  # two software stacks: four cells as locked, two drifted
            exact = index < 4
            row.update(lock_file="envs/current-cpu.txt", lock_sha256="1" * 64,
                       installed_sha256=("a" if exact else "b") * 64, lock_match=exact,
                       lock_drift="" if exact else "six 1.17.0 -> 1.16.0",
                       drift_accepted=not exact, runner="native")
        shard.write_shard(rows, path)
        paths.append(path)
    return paths


def test_merged_table_holds_every_row_of_every_shard(shards, tmp_path):
    frame = summary.read_shards(shards)
    assert len(frame) == 6 * len(POINTS)
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
    table = pq.read_table(path).drop(["p90", "precision"])
    pq.write_table(table, path)
    frame = summary.read_shards([path])
    assert frame["p90"].isna().all() and list(frame.columns) == contract.NAMES
    assert (frame["precision"] == "fp32").all()  # points from before precisions were fp32


def test_shards_from_before_the_slurm_columns_merge_beside_shards_from_slurm_jobs(tmp_path):
    old, new = str(tmp_path / "old.parquet"), str(tmp_path / "new.parquet")
    shard.write_shard(cell_rows("pytorch", "eager", "gpt2", "duel", 1.0), old)
    slurm = [name for name in contract.NAMES if name.startswith("slurm_")]
    pq.write_table(pq.read_table(old).drop(slurm), old)
    rows = cell_rows("tensorflow", "eager", "gpt2", "duel", 2.0)
    for row in rows:
        row.update(slurm_job_id="77", slurm_node="n1", slurm_cpus_per_task=2)
    shard.write_shard(rows, new)
    frame = summary.read_shards([old, new])
    assert list(frame.columns) == contract.NAMES
    assert frame["slurm_job_id"].isna().sum() == len(POINTS)
    assert list(frame["slurm_job_id"].dropna()) == ["77"] * len(POINTS)


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
        "mode speed-up", "GFLOP per s", "cross-era", "deployment", "historical 2019",
        "environment"]

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


def era_shards(tmp_path):
    paths = []
    for era, scale, status_of in (("hf2019", 2.0, {(2, 8): "oom"}), ("current", 1.0, None)):
        rows = cell_rows("pytorch", "eager", "gpt2", "timeit", scale, status_of)
        for row in rows:
            row["era"] = era
            row["framework_version"] = "1.3.0" if era == "hf2019" else "2.13.0"
        path = str(tmp_path / ("%s.parquet" % era))
        shard.write_shard(rows, path)
        paths.append(path)
    return paths


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


def test_a_shard_from_before_the_rename_reads_method_hf2019_as_timeit(tmp_path):
    rows = cell_rows("pytorch", "eager", "gpt2", "hf2019", 1.0, None)  # a shard with the method's other name
    frame = summary.read_shards([shard.write_shard(rows, str(tmp_path / "old.parquet"))])
    assert set(frame["method"]) == {"timeit"}
    points = summary.with_reported(frame)
    assert list(points["reported_ms"]) == [row["mean"] for row in rows if row["status"] == "ok"]


def test_historical_sheet_sets_published_figures_beside_this_run(tmp_path):
    from duel.host.tables import history
    paths = era_shards(tmp_path)
    frame = summary.read_shards(paths)
    table = history.historical_table(frame)
    published = table[table["source"].str.contains("published")]
    assert sorted(published["mean_s"]) == [0.043, 0.046, 0.748, 0.823]
    assert set(published["hardware"]) == set(history.HARDWARE_2019.values())
    mine = table[~table["source"].str.contains("published")].set_index("era")
    old = [r for r in pq.read_table(paths[0]).to_pylist() if r["status"] == "ok"]
    assert mine.loc["hf2019", "mean_s"] == pytest.approx(
        sum(r["mean"] / 1000.0 for r in old) / len(old), rel=1e-12)
    assert mine.loc["hf2019", "ok_points"] == 2 and mine.loc["hf2019", "points"] == 3
    assert "Test CPU, 2 threads" == mine.loc["current", "hardware"]


def test_2019_csv_layout(tmp_path):
    from duel.host.tables import history
    paths = era_shards(tmp_path)
    written = history.write_2019_csvs(summary.read_shards(paths), str(tmp_path / "csv"))
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


def spoil(shards):
    """The second shard truncated (a job killed while copying it), the fourth not Parquet."""
    with open(shards[1], "rb") as handle:
        data = handle.read()
    with open(shards[1], "wb") as handle:
        handle.write(data[:len(data) // 2])
    with open(shards[3], "w") as handle:
        handle.write("not a shard\n")
    return [shards[1], shards[3]]


def test_a_corrupt_or_truncated_shard_is_named_with_what_to_do(shards):
    bad = spoil(shards)
    with pytest.raises(summary.ShardError) as error:
        summary.read_shards(shards)
    lines = str(error.value).splitlines()
    assert len(lines) == 2  # one line per bad shard, every bad shard at once
    for line, path in zip(lines, bad):
        assert line.startswith("cannot merge shard %s: not a readable Parquet file, corrupt or "
                               "truncated (ArrowInvalid: " % path)
        assert line.endswith("Delete it and run the same command again: Snakemake measures that "
                             "cell again, alone.")


def test_a_shard_with_a_column_of_the_wrong_type_is_named(tmp_path):
    path = str(tmp_path / "odd.parquet")
    pq.write_table(pa.table({"era": ["current"], "batch_size": ["one"]}), path)
    with pytest.raises(summary.ShardError, match="odd.parquet: its column batch_size is not "
                                                 "int64"):
        summary.read_shard(path)


MERGE_AS_SNAKEMAKE_RUNS_IT = """
import runpy, sys, types
shards, folder = sys.argv[2].split(","), sys.argv[3]
snakemake = types.SimpleNamespace(
    log=[folder + "/merge.log"], input=types.SimpleNamespace(shards=shards),
    output=types.SimpleNamespace(parquet=folder + "/summary.parquet", csv=folder + "/summary.csv",
                                 xlsx=folder + "/summary.xlsx", csv_2019=folder + "/csv-2019"),
    params=types.SimpleNamespace(min_effect=0.05))
runpy.run_path(sys.argv[1], init_globals={"snakemake": snakemake}, run_name="__main__")
"""


def test_the_merge_job_says_it_in_one_line_in_its_log_and_on_the_console(shards, tmp_path):
    bad = spoil(shards)
    result = subprocess.run(
        [sys.executable, "-c", MERGE_AS_SNAKEMAKE_RUNS_IT,
         os.path.join(SCRIPTS, "rules", "merge_shards.py"), ",".join(shards), str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    with open(str(tmp_path / "merge.log")) as handle:
        log = handle.read()
    assert log == result.stderr and result.stdout == ""
    assert [line.split(": ")[0] for line in log.splitlines()] == \
        ["cannot merge shard %s" % path for path in bad]
    assert "Traceback" not in log and not os.path.exists(str(tmp_path / "summary.parquet"))


def test_mode_speedups_say_why_a_ratio_is_missing(shards):
    speedups = comparisons.mode_speedups(summary.read_shards(shards))
    rows = {(row["model"], row["point"]): row for _, row in speedups.iterrows()}
    assert set(speedups["mode"]) == {"torchscript"} and len(rows) == len(POINTS)
    assert rows[("gpt2", "1x64")]["status"] == "error" and pd.isna(rows[("gpt2", "1x64")]["ratio"])
    for point in ("1x8", "2x8"):
        row = rows[("gpt2", point)]
        assert row["status"] == "ok" and row["ratio"] == row["reported_ms_eager"] / \
            row["reported_ms_torchscript"] > 1


def test_the_end_of_run_lines_show_each_failure_message_in_one_line():
    rows = []
    for length, status, message in ((8, "ok", None), (16, "error", "ValueError: broke\nat x"),
                                    (32, "oom", " \n"), (64, "error", "")):
        row = contract.empty_row()
        row.update(model="m", framework="pytorch", mode="eager", batch_size=1, seq_len=length,
                   status=status, message=message)
        rows.append(row)
    head, *failures = outcome.lines(pd.DataFrame(rows))
    assert head.startswith("Duel: 4 points: 1 ok, 2 error, 1 oom. 3 of 4 points FAILED")
    assert failures == ["  m pytorch eager 1x16 (error, 1 point): ValueError: broke",
                        "  m pytorch eager 1x32 (oom, 1 point): (no message)",
                        "  m pytorch eager 1x64 (error, 1 point): (no message)"]
