"""The store's files: a folder of Parquet files per run, added atomically, read through DuckDB.

Layout (store version 1), under the store folder (config key ``store``, default results/store):

    VERSION                              the layout's version
    runs/<run id>/run.parquet            one row: when, where, what, how many points, headline
    runs/<run id>/points-<hash>.parquet  the rows of shards added together: every column of the
                                         data contract, plus run_id, shard, shard_sha256
    .lock                                writers take it in turn (a second add waits)
    .incoming-<pid>-<n>/                 an add being written; a killed add's is removed later

Why Parquet files under DuckDB views rather than one DuckDB database file: DuckDB lets a single
process open a database file for writing and no other process open it meanwhile, so every
``duel runs`` would wait for every add. Here a run appears by one rename: readers never wait and
never see half a run, writers queue on a lock file, and a run is a folder that can be copied to
another store. A shard is named by the SHA-256 of its bytes, so adding it again stores nothing.
"""
import contextlib
import fcntl
import glob
import hashlib
import itertools
import os
import re
import shutil
import sys
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from duel.cell import files

VERSION = 1
VERSION_FILE = "VERSION"
RUNS = "runs"
RUN_FILE = "run.parquet"
POINTS_GLOB = "points-*.parquet"
INCOMING = ".incoming-"
REMOVED = ".removed-"
LOCK = ".lock"
DEFAULT = os.path.join("results", "store")
STORE_COLUMNS = ("run_id", "shard", "shard_sha256")  # what a stored row adds to a shard's
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# Seconds an add pauses once its files are written and before they become a run: lets a test
# kill an add at its most delicate moment. Unset: no pause.
PAUSE_ENV = "DUEL_STORE_TEST_PAUSE_S"
_counter = itertools.count()


class StoreError(ValueError):
    """The store cannot do what was asked: one line for the user."""


def default_path():
    """The store of the workflow run from this folder: $DUEL_STORE, else results/store."""
    return os.environ.get("DUEL_STORE") or DEFAULT


def check_run_id(run_id):
    if not RUN_ID.match(run_id or ""):
        raise StoreError("%r is not a run id (letters, digits, '.', '_', '-')" % (run_id,))
    return run_id


def version(store):
    """The layout version of an existing store; StoreError where none is there, or a newer one."""
    path = os.path.join(store, VERSION_FILE)
    try:
        with open(path) as handle:
            found = int(handle.read().strip())
    except FileNotFoundError:
        raise StoreError("%s is not a Duel results store (it has no %s)" % (store, VERSION_FILE))
    except (OSError, ValueError) as error:
        raise StoreError("%s: unreadable (%s)" % (path, error))
    if found > VERSION:
        raise StoreError("%s is a version %d store; this Duel reads up to version %d: update it"
                         % (store, found, VERSION))
    return found


def create(store):
    """Make an empty store at ``store`` if none is there; its version either way."""
    os.makedirs(os.path.join(store, RUNS), exist_ok=True)
    if not os.path.exists(os.path.join(store, VERSION_FILE)):
        with files.atomic_path(os.path.join(store, VERSION_FILE)) as partial:
            with open(partial, "w") as handle:
                handle.write("%d\n" % VERSION)
    return version(store)


def run_folder(store, run_id):
    return os.path.join(store, RUNS, check_run_id(run_id))


def run_ids(store):
    """The ids of the runs in the store."""
    return sorted(os.path.basename(os.path.dirname(path))
                  for path in glob.glob(os.path.join(store, RUNS, "*", RUN_FILE)))


@contextlib.contextmanager
def writing(store):
    """Hold the store's writer lock (waiting for another writer); clear what a killed writer
    left. Readers take no lock."""
    create(store)
    with open(os.path.join(store, LOCK), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        for left in glob.glob(os.path.join(store, INCOMING + "*")) + \
                glob.glob(os.path.join(store, REMOVED + "*")):
            shutil.rmtree(left, ignore_errors=True)
        yield


def stored_shards(store):
    """The SHA-256 of every shard in the store."""
    found = query(store, "SELECT DISTINCT shard_sha256 FROM points")
    return set(found["shard_sha256"].dropna())


def part_name(shard_hashes):
    digest = hashlib.sha256("\n".join(sorted(shard_hashes)).encode()).hexdigest()
    return "points-%s.parquet" % digest[:20]


def add(store, run_id, points, describe):
    """Add the rows ``points`` (an Arrow table with shard_sha256) to run ``run_id``: those of
    shards not yet stored, atomically, holding the writer lock. ``describe(frame of all the
    run's rows)`` makes the run's one-row record (run.parquet). Returns how many shards were new.
    """
    check_run_id(run_id)
    with writing(store):
        known = stored_shards(store)
        fresh = points.filter(pc.invert(pc.is_in(
            points.column("shard_sha256"), value_set=pa.array(sorted(known), pa.string()))))
        shards = sorted(set(fresh.column("shard_sha256").to_pylist()))
        if not shards:
            return 0
        incoming = os.path.join(store, "%s%d-%d" % (INCOMING, os.getpid(), next(_counter)))
        os.makedirs(incoming)
        name = part_name(shards)
        if "run_id" in fresh.column_names:
            fresh = fresh.drop_columns(["run_id"])
        fresh = fresh.append_column("run_id", pa.array([run_id] * fresh.num_rows, pa.string()))
        pq.write_table(fresh, os.path.join(incoming, name))
        folder = run_folder(store, run_id)
        earlier = sorted(glob.glob(os.path.join(folder, POINTS_GLOB)))
        every = [pq.read_table(path) for path in earlier] + [fresh]
        frame = pa.concat_tables(every, promote_options="permissive").to_pandas()
        pq.write_table(pa.Table.from_pylist([describe(frame)]),
                       os.path.join(incoming, RUN_FILE))
        pause = float(os.environ.get(PAUSE_ENV) or 0)
        if pause:
            sys.stderr.write("store: paused before adding %s\n" % run_id)
            sys.stderr.flush()
            time.sleep(pause)
        if earlier:  # the run is there: its new part, then its record, each one rename
            os.replace(os.path.join(incoming, name), os.path.join(folder, name))
            os.replace(os.path.join(incoming, RUN_FILE), os.path.join(folder, RUN_FILE))
            os.rmdir(incoming)
        else:
            os.rename(incoming, folder)
        return len(shards)


def remove(store, run_id):
    """Take run ``run_id`` out of the store (one rename, then the files go)."""
    version(store)
    folder = run_folder(store, run_id)
    with writing(store):
        if not os.path.isdir(folder):
            raise StoreError("%s has no run %s (duel runs lists them)" % (store, run_id))
        gone = os.path.join(store, "%s%s-%d" % (REMOVED, run_id, os.getpid()))
        os.rename(folder, gone)
        shutil.rmtree(gone)


def connect(store):
    """A DuckDB connection with the views ``runs`` (a row per run) and ``points`` (a row per
    point, process and attempt of every run): SQL over the whole store."""
    version(store)
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")  # answers go to pipes and files
    for view, pattern in (("runs", RUN_FILE), ("points", POINTS_GLOB)):
        found = glob.glob(os.path.join(store, RUNS, "*", pattern))
        if found:
            source = "read_parquet(%s, union_by_name = true)" % _literal(
                os.path.join(os.path.abspath(store), RUNS, "*", pattern))
        else:
            source = "(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS shard_sha256 WHERE false)"
        connection.execute("CREATE VIEW %s AS SELECT * FROM %s" % (view, source))
    return connection


def _literal(text):
    return "'%s'" % text.replace("'", "''")


def query(store, sql, parameters=None):
    """The answer to ``sql`` over the views of ``connect`` as a DataFrame. A run removed while
    the query read it is read again without it."""
    for attempt in (1, 2):
        connection = connect(store)
        try:
            return connection.execute(sql, parameters or []).df()
        except duckdb.IOException:
            if attempt == 2:
                raise
        finally:
            connection.close()
