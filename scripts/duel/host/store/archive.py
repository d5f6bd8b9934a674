"""The store's files: a folder of Parquet files per run, added atomically, read through DuckDB.

Layout (store version 3), under the store folder (config key ``store``, default results/store):

    VERSION                              the layout's version
    runs/<run id>/run.parquet            one row: when, where, what, how many points, headline,
                                         how disturbed its host was (noisy)
    runs/<run id>/points-<hash>.parquet  the rows of shards added together: every column of the
                                         data contract, plus run_id, shard, shard_sha256
    index.parquet                        every point's figures without samples, one file: what
                                         history and trend read (derived from runs/, remade
                                         whenever it does not match them)
    removed.json                         the runs `duel store rm` took out: not added again
    bisections/<name>.json               the answer of each bisection (duel bisect) over the
                                         runs it measured, the latest under its name
    set-aside/<run id>/                  a run whose files cannot be read, moved out of every
                                         question (`duel store check` names them)
    .lock                                writers take it in turn (a second add waits, saying who
                                         holds it: host, pid, since when)
    .incoming-<pid>-<n>/                 an add being written; a killed add's is removed later
    .replaced-<run id>/                  a run's folder while an add puts its grown copy in
                                         place; a killed add's is put back by the next writer
    .before-migration-<run id>/          a run's files as an older version wrote them, kept
                                         until the migrated store's index is written

Every run's files and the index are in the columns declared here (RUN_SCHEMA, POINTS_SCHEMA,
INDEX_SCHEMA), and VERSION changes with them (the index is derived: made again whenever its
columns differ from INDEX_SCHEMA). Version 2 differed only in its index, without generation's
figures; version 1 in its files too: a points file held the data contract of the Duel that
added it, in the types pandas gave it, and a run record lacked the columns recorded since. A
store of an older version is read through ``migrated`` (its files in today's columns, in memory)
until the next writer migrates it, once, under the lock (``migrate``); a store newer than this
code is refused in one line. That is the one place that knows an older store: readers and
writers assume today's columns. A run folder moves between stores of one version; ``duel store
add`` of its results folder works across versions.

Why Parquet files under DuckDB views rather than one DuckDB database file: DuckDB lets a single
process open a database file for writing and no other process open it meanwhile, so every
``duel runs`` would wait for every add. Here a run appears by one rename: readers never wait and
never see half a run, writers queue on a lock file, and a run is a folder that can be copied to
another store. A shard is named by the SHA-256 of its bytes, so adding it again stores nothing.
"""
import contextlib
import datetime
import errno
import fcntl
import glob
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import sys
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from duel.cell import contract, files
from duel.host.plan import layout
from duel.host.tables import scopes, summary

VERSION = 3
VERSION_FILE = "VERSION"
RUNS = "runs"
RUN_FILE = "run.parquet"
POINTS_GLOB = "points-*.parquet"
INCOMING = ".incoming-"
REMOVED = ".removed-"
REPLACED = ".replaced-"  # a run's folder while its grown copy takes its place
BEFORE_MIGRATION = ".before-migration-"  # a run's old folder while its store migrates
LOCK = ".lock"
REMOVED_RUNS = "removed.json"
BISECTIONS = "bisections"
SET_ASIDE = "set-aside"
DEFAULT = layout.at(layout.STORE)
LOCK_WAIT_S = 300.0  # a writer waits this long for another's lock, then gives up, naming it
LOCK_WAIT_ENV = "DUEL_STORE_LOCK_WAIT_S"  # set: that many seconds instead
LOCK_SAY_S = 10.0  # and says who holds it this often meanwhile
STORE_COLUMNS = ("run_id", "shard", "shard_sha256")  # what a stored row adds to a shard's
# The columns of a points file: the data contract's, in its types, then the store's own.
POINTS_SCHEMA = pa.schema(list(contract.COLUMNS) + [(name, pa.string()) for name in STORE_COLUMNS])
# The one row of a run.parquet (ingest.describer makes it): when, where, what, its headline, how
# disturbed its host was and where its noise lay (null: not recorded when the run was stored).
RUN_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("store_version", pa.int64()), ("started_at", pa.string()),
    ("ended_at", pa.string()), ("status", pa.string()), ("machine", pa.string()),
    ("hostname", pa.string()), ("cpu_model", pa.string()), ("cpu_flags", pa.string()),
    ("logical_cpus", pa.int64()), ("gpus", pa.string()), ("git_commit", pa.string()),
    ("git_dirty", pa.bool_()), ("eras", pa.string()), ("devices", pa.string()),
    ("threads", pa.string()), ("lock_sha256", pa.string()), ("points", pa.int64()),
    ("processes", pa.int64()), ("headline", pa.string()), ("counted_points", pa.int64()),
    ("disturbed_points", pa.int64()), ("steal_share", pa.float64()), ("noisy", pa.bool_()),
    ("sample_sd", pa.float64()), ("between_sd", pa.float64()), ("noise_ratio", pa.float64()),
    ("manifest", pa.string()), ("source", pa.string()), ("added_at", pa.string())])
INDEX = "index.parquet"
# The index: a row per stored row, its run's when and where, and only what a figure needs (the
# columns the contract shows in the index).
RUN_INDEXED = ("machine", "started_at", "git_commit")
POINT_INDEXED = contract.shown_in(contract.INDEX)
INDEX_SCHEMA = pa.schema(
    [("run_id", pa.string()), ("part", pa.string()), ("shard_sha256", pa.string())]
    + [(name, pa.string()) for name in RUN_INDEXED]
    + [(name, contract.BY_NAME[name].type) for name in POINT_INDEXED])
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_counter = itertools.count()


class StoreError(ValueError):
    """The store cannot do what was asked: one line for the user."""


def say(line):
    """A line about the store for whoever runs the command (standard error)."""
    sys.stderr.write("store: %s\n" % line)
    sys.stderr.flush()


def locate(given=None):
    """The store a command or a workflow run uses: the one it was given (``--store``, config
    key ``store``), else $DUEL_STORE, else results/store under the working folder."""
    return given or os.environ.get("DUEL_STORE") or DEFAULT


def _in(folder, *parts):
    """Files matching ``parts`` under ``folder``: the folder's own name is never a pattern."""
    return glob.glob(os.path.join(glob.escape(folder), *parts))


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


def _write_version(store):
    with files.atomic_path(os.path.join(store, VERSION_FILE)) as partial:
        with open(partial, "w") as handle:
            handle.write("%d\n" % VERSION)


def create(store):
    """Make an empty store at ``store`` if none is there; its version either way (a newer
    store is refused before anything is written)."""
    if os.path.exists(os.path.join(store, VERSION_FILE)):
        found = version(store)
    else:
        os.makedirs(store, exist_ok=True)
        _write_version(store)
        found = VERSION
    os.makedirs(os.path.join(store, RUNS), exist_ok=True)
    return found


def run_folder(store, run_id):
    return os.path.join(store, RUNS, check_run_id(run_id))


def run_ids(store):
    """The ids of the runs in the store."""
    return sorted(os.path.basename(os.path.dirname(path))
                  for path in _in(store, RUNS, "*", RUN_FILE))


def _holder(handle):
    """Who holds the lock, as its holder wrote it: 'pid 123 on host since 2026-...'."""
    try:
        handle.seek(0)
        record = json.loads(handle.read() or "{}")
        return "pid %s on %s since %s" % (record["pid"], record["host"], record["since"])
    except (ValueError, KeyError, OSError):
        return "a writer that did not say who it is"


def _lock(handle, store, wait_s):
    """Take the writer lock on the open ``handle``, waiting ``wait_s`` at most and saying who
    holds it every LOCK_SAY_S meanwhile; StoreError when it stays held or when this file
    system has no locks."""
    started = said = time.time()
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise StoreError(
                    "%s: this file system does not lock files (flock: %s); keep the store on "
                    "a file system that does, or let one writer at a time add to it"
                    % (os.path.join(store, LOCK), os.strerror(error.errno)))
        waited = time.time() - started
        if waited >= wait_s:
            raise StoreError(
                "%s is locked by %s, still after %.0f s: stop that process if it is stuck (a "
                "holder that ends frees the lock), then run again" % (store, _holder(handle),
                                                                      waited))
        if time.time() - said >= LOCK_SAY_S:
            say("waiting for the lock of %s, held by %s" % (store, _holder(handle)))
            said = time.time()
        time.sleep(0.2)
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                             "since": datetime.datetime.now(datetime.timezone.utc).isoformat(
                                 timespec="seconds")}))
    handle.flush()


@contextlib.contextmanager
def writing(store, wait_s=None):
    """Hold the store's writer lock (waiting ``wait_s`` at most for another writer: default
    $DUEL_STORE_LOCK_WAIT_S, else LOCK_WAIT_S); clear what a killed writer left, migrate a
    store of an older version, set damaged runs aside, and make the index again where it does
    not match the runs (a run folder copied in by hand). Yields the index. Readers take no
    lock."""
    create(store)
    if wait_s is None:
        wait_s = float(os.environ.get(LOCK_WAIT_ENV) or LOCK_WAIT_S)
    with open(os.path.join(store, LOCK), "a+") as handle:
        _lock(handle, store, wait_s)
        for left in _in(store, INCOMING + "*") + _in(store, REMOVED + "*"):
            shutil.rmtree(left, ignore_errors=True)
        _finish_replacing(store)
        if version(store) < VERSION:
            migrate(store)
        index = _current_index(store)
        if index is None:
            index = _index_of_runs(store, older=False, set_aside_damaged=True)
            _write_index(store, index)
        for left in _in(store, BEFORE_MIGRATION + "*"):  # a migration's old files: the index
            shutil.rmtree(left, ignore_errors=True)  # of the new ones is written
        yield index


def removed_runs(store):
    """{run id: when} of the runs ``remove`` took out of the store."""
    try:
        with open(os.path.join(store, REMOVED_RUNS)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise StoreError("%s: unreadable (%s); it lists the runs duel store rm took out: fix or "
                         "delete it" % (os.path.join(store, REMOVED_RUNS), error))


def _write_removed(store, removed):
    files.write_json(os.path.join(store, REMOVED_RUNS), removed, sort_keys=True)


def restore(store, run_id):
    """Let a removed run be added again."""
    with writing(store):
        removed = removed_runs(store)
        if removed.pop(run_id, None) is not None:
            _write_removed(store, removed)


def damage(store, run_id, full=False):
    """What makes a stored run unreadable ('FILE: reason'), or None. ``full``: read every file
    whole; else its run record and the footer of each points file (what a kill or a partial
    copy breaks)."""
    folder = run_folder(store, run_id)
    paths = [os.path.join(folder, RUN_FILE)] + sorted(_in(folder, POINTS_GLOB))
    for path in paths:
        try:
            if full or path.endswith(RUN_FILE):
                pq.read_table(path)
            else:
                pq.read_metadata(path)
        except (OSError, pa.ArrowException) as error:
            return "%s: %s" % (path, str(error).splitlines()[0] if str(error) else
                               type(error).__name__)
    return None


def damaged_runs(store, full=False):
    """{run id: what is damaged} of every stored run that cannot be read."""
    found = {}
    for run_id in run_ids(store):
        problem = damage(store, run_id, full)
        if problem:
            found[run_id] = problem
    return found


def set_aside(store, run_id, problem):
    """Move a damaged run out of the store's questions into set-aside/ (under the lock)."""
    target = os.path.join(store, SET_ASIDE, run_id)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.exists(target):
        shutil.rmtree(target)
    os.rename(run_folder(store, run_id), target)
    with open(os.path.join(target, "DAMAGED"), "w") as handle:
        handle.write(problem + "\n")
    say("run %s set aside to %s: %s" % (run_id, target, problem))


def set_aside_damaged(store, damaged):
    """Each run of ``damaged`` ({run id: its problem}) set aside, holding the writer's lock (an
    older store is migrated first), and the index rebuilt without them."""
    with writing(store) as before:
        for run_id in sorted(damaged):
            if os.path.isdir(run_folder(store, run_id)):  # not set aside already
                set_aside(store, run_id, damaged[run_id])
        if damaged:
            reindex(store, before, sorted(damaged))


_skipped = set()  # the damaged runs this process said it skips: each is said once


def skipping(run_id, problem):
    if run_id not in _skipped:
        _skipped.add(run_id)
        say("run %s skipped, it cannot be read (%s): `duel store check --fix` sets it aside"
            % (run_id, problem))


def stored_shards(store, index=None):
    """The SHA-256 of every shard in the store (``index``: its index, where read already)."""
    index = index_table(store) if index is None else index
    return set(pc.unique(index.column("shard_sha256")).to_pylist()) - {None}


def _parts_on_disk(store):
    return set(os.path.relpath(path, os.path.join(store, RUNS))
               for path in _in(store, RUNS, "*", POINTS_GLOB))


def _indexed_parts(table):
    pairs = table.group_by(["run_id", "part"]).aggregate([])
    return set("%s/%s" % pair for pair in zip(pairs.column("run_id").to_pylist(),
                                              pairs.column("part").to_pylist()))


def _current_index(store):
    """The index file's table where it matches the run folders and has today's columns, else
    None (then it is made again from the runs' files)."""
    try:
        table = pq.read_table(os.path.join(store, INDEX))
    except (OSError, pa.ArrowException):
        return None
    if not table.schema.equals(INDEX_SCHEMA):
        return None
    return table if _indexed_parts(table) == _parts_on_disk(store) else None


def _index_of_run(store, run_id, older):
    """The index rows of one stored run, from its files (``older``: of an older version's store,
    read through ``migrated``)."""
    folder = run_folder(store, run_id)
    record = pq.read_table(os.path.join(folder, RUN_FILE)).to_pylist()[0]
    tables = []
    for path in sorted(_in(folder, POINTS_GLOB)):
        columns = list(POINT_INDEXED + ("shard_sha256",))
        if older:
            part = migrated(path).select(columns)
        elif pq.read_schema(path).equals(POINTS_SCHEMA):
            part = pq.read_table(path, columns=columns)
        else:
            raise ValueError("%s is not in this store's columns (version %d): a run folder "
                             "copied in from another version's store? `duel store add` its "
                             "results folder instead" % (path, VERSION))
        rows = part.num_rows
        columns = []
        for field in INDEX_SCHEMA:
            if field.name == "run_id":
                columns.append(pa.array([run_id] * rows, pa.string()))
            elif field.name == "part":
                columns.append(pa.array([os.path.basename(path)] * rows, pa.string()))
            elif field.name in RUN_INDEXED:
                value = record.get(field.name)
                columns.append(pa.array([None if value is None else str(value)] * rows,
                                        pa.string()))
            else:
                columns.append(part.column(field.name))
        tables.append(pa.Table.from_arrays(columns, schema=INDEX_SCHEMA))
    return tables


def index_table(store):
    """Every stored row's figures (INDEX_SCHEMA): the index file where it matches the run
    folders, else made from them (a writer writes it)."""
    table = _current_index(store)
    if table is not None:
        return table
    return _index_of_runs(store, older=version(store) < VERSION)


def _index_of_runs(store, older, set_aside_damaged=False):
    """The index made from every run's files. A run that cannot be read is left out and said
    (``set_aside_damaged``, under the lock: moved to set-aside/)."""
    tables = []
    for run_id in run_ids(store):
        try:
            tables += _index_of_run(store, run_id, older)
        except (OSError, pa.ArrowException, IndexError, ValueError) as error:
            problem = damage(store, run_id) or "%s: %s" % (run_folder(store, run_id), error)
            if set_aside_damaged:
                set_aside(store, run_id, problem)
            else:
                skipping(run_id, problem)
    return pa.concat_tables(tables) if tables else INDEX_SCHEMA.empty_table()


def _write_index(store, table):
    with files.atomic_path(os.path.join(store, INDEX)) as partial:
        pq.write_table(table, partial)


def reindex(store, before, changed):
    """After the runs ``changed`` changed (under the lock): the index ``before`` the change with
    their rows made again from their files (none where they are gone)."""
    kept = before.filter(pc.invert(pc.is_in(before.column("run_id"),
                                            value_set=pa.array(sorted(changed), pa.string()))))
    fresh = [table for run_id in sorted(changed) if os.path.isdir(run_folder(store, run_id))
             for table in _index_of_run(store, run_id, older=False)]
    _write_index(store, pa.concat_tables([kept] + fresh))


def _typed(table, schema):
    """``table`` in ``schema``: its columns in that order and cast, those it lacks null, others
    left out."""
    return pa.Table.from_arrays(
        [table.column(field.name).cast(field.type) if field.name in table.column_names
         else pa.nulls(table.num_rows, field.type) for field in schema], schema=schema)


def _record(record):
    """A run's one-row table in RUN_SCHEMA (a column it lacks, or NaN: null); ValueError naming
    the columns it holds that RUN_SCHEMA does not declare."""
    undeclared = sorted(set(record) - set(RUN_SCHEMA.names))
    if undeclared:
        raise ValueError("run record columns not declared in archive.RUN_SCHEMA: %s"
                         % ", ".join(undeclared))
    return pa.Table.from_arrays([pa.array([record.get(field.name)], field.type, from_pandas=True)
                                 for field in RUN_SCHEMA], schema=RUN_SCHEMA)


def migrated(path):
    """A file of a store of an older version in today's columns: a points file's rows through
    the merge's migration (summary.migrated: the values an older Duel left implicit or named
    otherwise), as today's add would store them; a run record with the columns recorded since
    null (unknown)."""
    table = pq.read_table(path)
    if os.path.basename(path) == RUN_FILE:
        return _typed(table, RUN_SCHEMA)
    frame = summary.migrated(table.to_pandas())
    return _typed(pa.Table.from_pandas(frame, preserve_index=False), POINTS_SCHEMA)


def migrate(store):
    """Make a store of an older version today's (under the lock): each run's files rewritten
    through ``migrated`` into a new folder that takes the run's place, its old folder kept
    aside (BEFORE_MIGRATION); then the new index, then VERSION; the old folders go once that
    is done (``writing``). Killed midway, it leaves every run whole, in one form or the other,
    under the old version, which readers read either way; the next writer puts back a run
    caught between its two renames and migrates the runs still in the old form. A run whose
    files cannot be read is set aside; one that cannot be written stops the migration."""
    say("%s is a version %d store: migrating it to version %d, once (its old files are kept "
        "until the new index is written)" % (store, version(store), VERSION))
    for kept in _in(store, BEFORE_MIGRATION + "*"):
        folder = run_folder(store, os.path.basename(kept)[len(BEFORE_MIGRATION):])
        if not os.path.isdir(folder):
            os.rename(kept, folder)
    for run_id in run_ids(store):
        kept = os.path.join(store, BEFORE_MIGRATION + run_id)
        if os.path.isdir(kept):  # migrated already, by a migration killed later
            continue
        folder = run_folder(store, run_id)
        try:
            tables = [(os.path.basename(path), migrated(path)) for path in
                      [os.path.join(folder, RUN_FILE)] + sorted(_in(folder, POINTS_GLOB))]
        except (OSError, pa.ArrowException, ValueError) as error:
            set_aside(store, run_id, damage(store, run_id) or "%s: %s" % (folder, error))
            continue
        incoming = _incoming(store)
        for name, table in tables:
            pq.write_table(table, os.path.join(incoming, name))
        os.rename(folder, kept)
        os.rename(incoming, folder)
    _write_index(store, _index_of_runs(store, older=False, set_aside_damaged=True))
    _write_version(store)


def _incoming(store):
    """A new hidden folder of the store for files that become a run by one rename."""
    incoming = os.path.join(store, "%s%d-%d" % (INCOMING, os.getpid(), next(_counter)))
    os.makedirs(incoming)
    return incoming


def _finish_replacing(store):
    """A run left as ``.replaced-<id>`` by a killed add: gone once its grown copy is in place,
    put back where the add died between its two renames (the new shards are added again)."""
    for old in _in(store, REPLACED + "*"):
        folder = run_folder(store, os.path.basename(old)[len(REPLACED):])
        if os.path.isdir(folder):
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(old, folder)


def part_name(shard_hashes):
    digest = hashlib.sha256("\n".join(sorted(shard_hashes)).encode()).hexdigest()
    return "points-%s.parquet" % digest[:20]


def add(store, run_id, points, describe):
    """Add the rows ``points`` (an Arrow table with shard_sha256) to run ``run_id``: those of
    shards not yet stored, atomically, holding the writer lock. ``describe(frame of all the
    run's rows)`` makes the run's one-row record (run.parquet). Returns how many shards were new.
    A run already stored grows by a whole new folder put in its place, so its points and its
    record always agree (a reader may miss the run for the instant between the two renames).
    """
    check_run_id(run_id)
    with writing(store) as before:
        known = stored_shards(store, before)
        fresh = points.filter(pc.invert(pc.is_in(
            points.column("shard_sha256"), value_set=pa.array(sorted(known), pa.string()))))
        shards = sorted(set(fresh.column("shard_sha256").to_pylist()))
        if not shards:
            return 0
        incoming = _incoming(store)
        name = part_name(shards)
        if "run_id" in fresh.column_names:
            fresh = fresh.drop_columns(["run_id"])
        fresh = _typed(fresh.append_column(
            "run_id", pa.array([run_id] * fresh.num_rows, pa.string())), POINTS_SCHEMA)
        pq.write_table(fresh, os.path.join(incoming, name))
        folder = run_folder(store, run_id)
        earlier = sorted(_in(folder, POINTS_GLOB))
        frame = pa.concat_tables([pq.read_table(path) for path in earlier] + [fresh]).to_pandas()
        pq.write_table(_record(describe(frame)), os.path.join(incoming, RUN_FILE))
        if earlier:  # a grown copy of the run takes its place: its parts are linked, not copied
            for path in earlier:
                try:
                    os.link(path, os.path.join(incoming, os.path.basename(path)))
                except OSError:  # a file system without hard links
                    shutil.copy2(path, incoming)
            replaced = os.path.join(store, REPLACED + run_id)
            os.rename(folder, replaced)
            os.rename(incoming, folder)
            shutil.rmtree(replaced)
        else:
            os.rename(incoming, folder)
        reindex(store, before, [run_id])
        return len(shards)


def add_bisection(store, record):
    """A bisection's answer (its record, named by ``record['name']``) into the store, replacing
    an earlier answer of that name."""
    check_run_id(record["name"])
    with writing(store):
        os.makedirs(os.path.join(store, BISECTIONS), exist_ok=True)
        files.write_json(os.path.join(store, BISECTIONS, record["name"] + ".json"), record)


def bisections(store):
    """The stored bisections' answers, by name."""
    found = []
    for path in sorted(_in(store, BISECTIONS, "*.json")):
        with open(path) as handle:
            found.append(json.load(handle))
    return found


def remove(store, run_id):
    """Take run ``run_id`` out of the store (one rename, then the files go) and remember it, so
    that adding its folder again does not bring it back."""
    version(store)
    folder = run_folder(store, run_id)
    with writing(store) as before:
        if not os.path.isdir(folder):
            raise StoreError("%s has no run %s (duel runs lists them)" % (store, run_id))
        removed = removed_runs(store)
        removed[run_id] = datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds")
        _write_removed(store, removed)
        gone = os.path.join(store, "%s%s-%d" % (REMOVED, run_id, os.getpid()))
        os.rename(folder, gone)
        shutil.rmtree(gone)
        reindex(store, before, [run_id])


VIEWS = ("runs", "points", "figures")


def connect(store, views=VIEWS, skip=()):
    """A DuckDB connection with the views ``runs`` (a row per run), ``points`` (a row per
    point, process and attempt of every run, samples included) and ``figures`` (the index: the
    same rows without samples, with their run's machine, start and commit): SQL over the whole
    store. ``views``: only those (each one over every run's files costs a read of their
    schemas); ``skip``: run ids left out (damaged). A store of an older version is read through
    ``migrated``, in memory."""
    older = version(store) < VERSION
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")  # answers go to pipes and files
    if "figures" in views:
        index = index_table(store)
        if skip:
            index = index.filter(pc.invert(pc.is_in(index.column("run_id"),
                                                    value_set=pa.array(sorted(skip)))))
        connection.register("figures_table", index)
        connection.execute("CREATE VIEW figures AS SELECT * FROM figures_table")
    for view, pattern, schema in (("runs", RUN_FILE, RUN_SCHEMA),
                                  ("points", POINTS_GLOB, POINTS_SCHEMA)):
        if view not in views:
            continue
        found = sorted(path for path in _in(os.path.abspath(store), RUNS, "*", pattern)
                       if os.path.basename(os.path.dirname(path)) not in skip)
        if found and not older:  # the files by name: a path is never read as a pattern
            source = "read_parquet([%s], union_by_name = true)" % ", ".join(
                _literal(path) for path in found)
        else:  # no run (or none readable), or an older store's files in today's columns
            source = view + "_table"
            connection.register(source, pa.concat_tables(
                [schema.empty_table()] + [migrated(path) for path in found]))
        connection.execute("CREATE VIEW %s AS SELECT * FROM %s" % (view, source))
    return connection


def _literal(text):
    return "'%s'" % text.replace("'", "''")


def query(store, sql, parameters=None, views=VIEWS):
    """The answer to ``sql`` over the views of ``connect`` as a DataFrame. A run removed while
    the query read it is read again without it; a run whose files cannot be read is left out,
    and said."""
    skip = set()
    for attempt in (1, 2, 3):
        try:
            connection = connect(store, views, skip)
            try:
                return connection.execute(sql, parameters or []).df()
            finally:
                connection.close()
        except (duckdb.IOException, duckdb.InvalidInputException, OSError,
                pa.ArrowException) as error:
            damaged = damaged_runs(store)
            for run_id in sorted(damaged):
                skipping(run_id, damaged[run_id])
            if attempt == 3 or (not (set(damaged) - skip) and
                                isinstance(error, duckdb.InvalidInputException)):
                raise StoreError("%s: a query over its files failed (%s); `duel store check` "
                                 "names damaged files" % (store, str(error).splitlines()[0]))
            skip |= set(damaged)
