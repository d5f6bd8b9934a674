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
from duel.host.render import columns_doc

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


def test_the_results_readme_is_written_from_the_contracts_declarations():
    assert columns_doc.render(columns_doc.head()) == open(
        os.path.join(REPO, columns_doc.OUTPUT)).read(), (
        "results/README.md is stale: run .venv/bin/python -m duel.host.render.columns_doc")
    text = open(os.path.join(REPO, columns_doc.OUTPUT)).read()
    named = re.findall(r"^\| `([a-z0-9_]+)` \|", text, flags=re.M)
    assert named == contract.NAMES


def test_every_column_is_declared_whole():
    """A name, a type, a unit where it is a number of something, one pooling, known places and
    words: a column cannot be added to the shard without saying each."""
    for declared in contract.DECLARED:
        assert re.match(r"^[a-z][a-z0-9_]*$", declared.name), declared
        assert isinstance(declared.type, pa.DataType), declared
        assert declared.pool in contract.POOLS, declared
        assert set(declared.shows) <= set(contract.PLACES), declared
        assert declared.meaning.strip(), declared
        if declared.name.endswith(("_ms", "_s", "_mb", "_bytes")):
            assert declared.unit, declared
    assert len(contract.NAMES) == len(set(contract.NAMES))
    text = [declared.name for declared in contract.DECLARED
            if pa.types.is_string(declared.type)]
    numeric_only = (contract.LARGEST, contract.MEDIAN_OF, contract.SAMPLES, contract.DERIVED)
    assert [name for name in text if contract.BY_NAME[name].pool in numeric_only] == []


def test_the_places_a_column_shows_in_read_the_declaration():
    """Each place's reader takes its columns from the contract: the store's index and the site's
    verdict exactly, and every column shown on a chart or in a sheet's table is one its drawing
    code names."""
    from duel.host.store import archive, judging
    assert archive.POINT_INDEXED == contract.shown_in(contract.INDEX)
    assert judging.VERDICT_COLUMNS == list(contract.shown_in(contract.SITE))
    from duel.host.render import spreadsheet
    host = os.path.join(REPO, "scripts", "duel", "host")
    plots = ["render/plots/" + name for name in sorted(os.listdir(os.path.join(host, "render",
                                                                               "plots")))
             if name.endswith(".py")]
    for place, modules, read in (
            (contract.CHART, plots, ["mean", "median"]),  # the reported time
            (contract.TABLE, ["render/spreadsheet.py", "verdicts/generation.py"],
             [name for name, _ in spreadsheet.MEMORY_TABLES])):
        source = "".join(open(os.path.join(host, module)).read() for module in modules)
        assert [name for name in contract.shown_in(place)
                if '"%s"' % name not in source and name not in read] == [], place
