"""Write a cell's rows as one Parquet shard, atomically.

The table is written to a temporary file in the same folder, flushed to disk, then renamed over
the final name: a reader (or a resumed run) never sees a half-written shard under the final name.
"""
import os

import pyarrow as pa
import pyarrow.parquet as pq

from . import contract


def rows_to_table(rows):
    """An Arrow table with exactly the contract's columns, types and order."""
    arrays = [
        pa.array([row.get(name) for row in rows], type=kind) for name, kind in contract.COLUMNS
    ]
    return pa.Table.from_arrays(arrays, names=contract.NAMES)


def write_shard(rows, path):
    """Write ``rows`` to ``path`` (Parquet) via a temporary file and an atomic rename."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    partial = "%s.partial-%d" % (path, os.getpid())
    try:
        pq.write_table(rows_to_table(rows), partial)
        with open(partial, "rb") as written:
            os.fsync(written.fileno())
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return path
