"""Reading and merging shards (tables/summary.py), and the merge job's one-line errors."""
import json
import os
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import POINTS, SCRIPTS, cell_rows
from duel.cell import contract, shard
from duel.host.tables import summary

pytestmark = pytest.mark.unit


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


def test_a_shard_from_before_the_rename_reads_method_hf2019_as_timeit(tmp_path):
    rows = cell_rows("pytorch", "eager", "gpt2", "hf2019", 1.0, None)  # a shard with the method's other name
    frame = summary.read_shards([shard.write_shard(rows, str(tmp_path / "old.parquet"))])
    assert set(frame["method"]) == {"timeit"}
    points = summary.with_reported(frame)
    assert list(points["reported_ms"]) == [row["mean"] for row in rows if row["status"] == "ok"]


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
    params=types.SimpleNamespace(min_effect=0.05, lacking=[]))
runpy.run_path(sys.argv[1], init_globals={"snakemake": snakemake}, run_name="__main__")
"""


def test_the_merge_job_says_it_in_one_line_in_its_log_and_on_the_console(shards, tmp_path):
    bad = spoil(shards)
    result = subprocess.run(
        [sys.executable, "-c", MERGE_AS_SNAKEMAKE_RUNS_IT,
         os.path.join(SCRIPTS, "merge_shards.py"), ",".join(shards), str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    with open(str(tmp_path / "merge.log")) as handle:
        log = handle.read()
    assert log == result.stderr and result.stdout == ""
    assert [line.split(": ")[0] for line in log.splitlines()] == \
        ["cannot merge shard %s" % path for path in bad]
    assert "Traceback" not in log and not os.path.exists(str(tmp_path / "summary.parquet"))
