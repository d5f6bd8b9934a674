"""The shard writer: the contract's schema, every sample kept, and atomic replacement."""
import hashlib
import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO
from duel.cell import contract, files, shard

pytestmark = pytest.mark.unit


def make_row(**values):
    row = contract.empty_row()
    row.update(era="current", device="cpu", framework="pytorch", mode="eager", task="inference",
               model="gpt2", batch_size=1, seq_len=8, method="duel", status="ok")
    row.update(values)
    return row


def test_shard_has_the_contract_schema_and_keeps_raw_samples(tmp_path):
    path = str(tmp_path / "cell.parquet")
    samples = [1.25, 0.1 + 0.2, 1e-9, 12345.678901234567]
    shard.write_shard([make_row(samples=samples, n_samples=4, median=1.0),
                       make_row(seq_len=2048, status="skipped", message="too long")], path)
    table = pq.read_table(path)
    assert table.schema.equals(contract.SCHEMA)
    rows = table.to_pylist()
    assert rows[0]["samples"] == samples  # bit for bit
    assert rows[1]["samples"] is None and rows[1]["status"] == "skipped"
    assert os.listdir(str(tmp_path)) == ["cell.parquet"]  # no temporary file left


def test_a_failed_write_leaves_the_previous_shard_and_no_partial_file(tmp_path):
    path = str(tmp_path / "cell.parquet")
    shard.write_shard([make_row(median=1.0)], path)
    before = pq.read_table(path).to_pylist()
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError)):
        shard.write_shard([make_row(median="not a number")], path)
    assert pq.read_table(path).to_pylist() == before
    assert os.listdir(str(tmp_path)) == ["cell.parquet"]


def test_an_all_failed_cell_still_writes_typed_columns(tmp_path):
    path = str(tmp_path / "cell.parquet")
    shard.write_shard([make_row(status="error", message="boom")], path)
    table = pq.read_table(path)
    assert table.schema.field("median").type == pa.float64()
    assert table.schema.field("samples").type == pa.list_(pa.float64())


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_partial(tmp_path):
    path = str(tmp_path / "record.json")
    files.write_json(path, {"run": 1})
    with pytest.raises(RuntimeError):
        with files.atomic_path(path) as partial:
            with open(partial, "w") as handle:
                handle.write("{half")
            raise RuntimeError("killed mid-write")
    with open(path) as handle:
        assert json.load(handle) == {"run": 1}
    assert os.listdir(str(tmp_path)) == ["record.json"]
    assert files.file_sha256(path) == hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_every_contract_column_is_documented_in_the_results_readme():
    with open(os.path.join(REPO, "results", "README.md")) as handle:
        text = handle.read()
    named = set(re.findall(r"`([a-z0-9_]+)`", text.split("## Columns", 1)[1]))
    assert [name for name in contract.NAMES if name not in named] == []
