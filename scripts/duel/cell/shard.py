"""Write a cell's rows as one Parquet shard, atomically.

The table is written to a temporary file in the same folder, flushed to disk, then renamed over
the final name: a reader (or a resumed run) never sees a half-written shard under the final name.
"""
import pyarrow as pa
import pyarrow.parquet as pq

from . import contract, files


def rows_to_table(rows):
    """An Arrow table with exactly the contract's columns, types and order."""
    arrays = [
        pa.array([row.get(name) for row in rows], type=kind) for name, kind in contract.COLUMNS
    ]
    return pa.Table.from_arrays(arrays, names=contract.NAMES)


def write_shard(rows, path):
    """Write ``rows`` to ``path`` (Parquet) via a temporary file and an atomic rename."""
    with files.atomic_path(path, sync=True) as partial:
        pq.write_table(rows_to_table(rows), partial)
    return path


def read_rows(path):
    """The rows of a shard this code wrote, as dicts of contract columns."""
    columns = pq.read_table(path).to_pydict()
    return [dict(zip(columns, values)) for values in zip(*columns.values())]
