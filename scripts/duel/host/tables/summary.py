"""Read every shard of a run into one table, and derive what the reports show.

Only the data contract (duel.cell.contract) is read, and every table read from disk, a shard
or a summary of any Duel version, goes through one migration (``migrated``): a column added
later gets nulls, or the value it implicitly had (MIGRATED_DEFAULTS: points from before the
precision dimension were fp32, from before replicates one process per cell, from before
retries the only attempt, counted, from before re-measuring in a process its first
measurement); rows judged disturbed before the rule had a name were judged by the ratio of
their canary to the job's fastest (``disturbance_rule`` "canary-ratio"); a value with
another name is read under its current one (RENAMED_VALUES: the timing method's other name
``hf2019`` is read as ``timeit``). This is the place for a migration if a column or a value is
ever renamed.
"""
import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from duel.cell import contract

from duel.host.tables import peaks as peaks_module
from duel.host.tables import replicates

CELL_KEYS = list(contract.CELL_KEYS)
# The keys of one table of results: a cell without its model, plus the timing method.
MIGRATED_DEFAULTS = {"precision": "fp32", "replicate": 1, "attempt": 1, "counted": True,
                     "remeasure": 0}
OLD_DISTURBANCE_RULE = "canary-ratio"
RENAMED_VALUES = {"method": contract.RENAMED_METHODS}
ENVIRONMENT = [declared.name for declared in contract.ENVIRONMENT]


class ShardError(ValueError):
    """Shards the merge cannot read: a line per shard naming the file, what is wrong with it and
    what to do about it."""


def unreadable(path, problem):
    return ShardError("cannot merge shard %s: %s. Delete it and run the same command again: "
                      "Snakemake measures that cell again, alone." % (path, problem))


def read_shard(path):
    """One shard as an Arrow table with exactly the contract's columns (ShardError if it is
    corrupt, truncated or not a shard)."""
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise unreadable(path, "not a readable Parquet file, corrupt or truncated (%s)"
                         % contract.error_line(error))
    columns = []
    for name, kind in contract.COLUMNS:
        try:
            if name in table.column_names:
                columns.append(table.column(name).cast(kind))
            else:
                columns.append(pa.nulls(table.num_rows, type=kind))
        except (pa.ArrowException, ValueError, TypeError) as error:
            raise unreadable(path, "its column %s is not %s (%s)" % (name, kind, contract.error_line(error)))
    return pa.Table.from_arrays(columns, names=contract.NAMES)


def read_shards(paths):
    """All shards, concatenated in the order given (the workflow's cell order); a ShardError
    naming every shard that cannot be read."""
    if not paths:
        raise ValueError("no shards to merge")
    tables, problems = [], []
    for path in paths:
        try:
            tables.append(read_shard(path))
        except ShardError as error:
            problems.append(str(error))
    if problems:
        raise ShardError("\n".join(problems))
    table = pa.concat_tables([table.append_column("shard_order", pa.array(
        [index] * table.num_rows, pa.int64())) for index, table in enumerate(tables)])
    frame = table.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get)
    return migrated(by_mode(frame).drop(columns="shard_order").reset_index(drop=True))


def by_mode(frame):
    """The rows of each shard with its modes one after the other, in its process's order (a
    process measures its modes side by side): cell by cell, as the sheets and charts read them."""
    together = frame["process_modes"].fillna(frame["mode"]).astype(str).str.split("+")
    rank = [names.index(mode) if mode in names else 0
            for names, mode in zip(together, frame["mode"].astype(str))]
    return frame.assign(mode_rank=rank).sort_values(
        ["shard_order", "mode_rank"], kind="stable").drop(columns="mode_rank")


def with_rows(frame, rows):
    """The long table ``frame`` with contract ``rows`` (dicts) after it, typed as a shard's."""
    table = pa.Table.from_pylist(rows, schema=pa.schema(contract.COLUMNS))
    extra = migrated(table.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get))
    return pd.concat([frame, extra], ignore_index=True)


def migrated(frame):
    """A table read from disk in today's terms: every contract column (null where absent, or its
    implicit value for MIGRATED_DEFAULTS) and today's names of values (RENAMED_VALUES); columns
    the contract does not know are kept."""
    frame = frame.copy()
    if "disturbed" in frame.columns and "disturbance_rule" not in frame.columns:
        frame["disturbance_rule"] = OLD_DISTURBANCE_RULE
    for name, value in MIGRATED_DEFAULTS.items():
        if name not in frame.columns:
            frame[name] = value
        else:
            frame[name] = frame[name].fillna(value)
    frame["replicate"] = frame["replicate"].astype("int64")
    missing = [name for name in contract.NAMES if name not in frame.columns]
    frame = pd.concat([frame, pd.DataFrame({name: None for name in missing}, index=frame.index,
                                           dtype=object)], axis=1)
    for column, renamed in RENAMED_VALUES.items():
        frame[column] = frame[column].replace(renamed)
    return frame


def read_summary(path):
    """A merged table written by any Duel version, migrated."""
    return migrated(pd.read_parquet(path))


def hardware(group):
    """Where a group of rows ran: the CPU (and threads) or the accelerator."""
    first = group.iloc[0]
    return "%s, %s threads" % (replicates.machine(first), first["threads"])


def reported_ms(row):
    """The figure a method reports for a point (contract.reported_statistic: timeit its mean, as
    2019 did, duel its median), of a point table: the pooled figures of replicates.py."""
    if row["status"] != "ok":
        return None
    return row[contract.reported_statistic(row["method"])]


def with_reported(frame):
    """The point table of a merged frame (replicates combined: replicates.point_table) plus
    ``reported_ms`` (see reported_ms), ``point`` ('BxL', e.g. '2x128'), and the hardware's
    nominal ``peak_gflops`` (with ``peak_source``, see peaks.py) and ``percent_of_peak``
    (achieved GFLOP/s as a share of it). Every report reads its numbers through this.

    A frame that has them already is returned as it is: the spreadsheet derives them once and
    hands that frame on to the history tables.
    """
    if "reported_ms" in frame.columns and "point" in frame.columns:
        return frame
    frame = replicates.point_table(frame)
    frame["reported_ms"] = [reported_ms(row) for _, row in frame.iterrows()]
    frame["point"] = [
        "%dx%d" % (batch, length) for batch, length in zip(frame["batch_size"], frame["seq_len"])
    ]
    peaks = [peaks_module.peak_gflops(row) for _, row in frame.iterrows()]
    frame["peak_gflops"] = [peak for peak, _ in peaks]
    frame["peak_source"] = [source for _, source in peaks]
    frame["percent_of_peak"] = [
        None if peak is None or pd.isna(achieved) else 100.0 * float(achieved) / peak
        for (peak, _), achieved in zip(peaks, frame["achieved_gflops"])
    ]
    return frame


def point_order(frame):
    """Point labels in the 2019 column order: batch size, then length, ascending."""
    pairs = sorted(set(zip(frame["batch_size"], frame["seq_len"])))
    return ["%dx%d" % pair for pair in pairs]


def model_rows(group, points, column, scale=1.0):
    """A row per model (in order of appearance): the model, then ``column`` / ``scale`` at each
    point, None where the point is missing or has no value (not ok)."""
    rows = []
    for model, records in group.groupby("model", sort=False):
        by_point = dict(zip(records["point"], records[column]))
        values = [by_point.get(point) for point in points]
        rows.append([model] + [None if value is None or pd.isna(value) else float(value) / scale
                               for value in values])
    return rows


def samples_as_text(frame):
    """The frame with its lists (``samples``, the canary's calibration readings) as JSON text
    (CSV and spreadsheet cells hold no lists)."""
    frame = frame.copy()
    for name in replicates.PER_ROW_LISTS:
        if name in frame.columns:
            frame[name] = [
                None if values is None else json.dumps([float(value) for value in values])
                for values in frame[name]
            ]
    return frame


def write_outputs(frame, parquet_path, csv_path):
    """The merged table as Parquet (lists kept) and CSV (samples as JSON text)."""
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet_path)
    samples_as_text(frame).to_csv(csv_path, index=False)


# What tells one software stack from another (duel/cell/locks.py): same installed set, same stack.
STACK_KEYS = ["era", "device", "runner", "lock_file", "lock_sha256", "installed_sha256",
              "lock_match", "drift_accepted"]


def stacks(frame):
    """One row per distinct software stack of the run, with the number of shards (processes) on it."""
    cells = frame.drop_duplicates(subset=CELL_KEYS)
    return cells.groupby(STACK_KEYS, dropna=False).size().rename("shards").reset_index()
