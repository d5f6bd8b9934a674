"""A results folder made into runs for the store: each shard on disk given to the run that wrote it.

A folder holds the shards of many runs (each run rewrites the cells it ran) and a manifest per
run (results/runs/<run id>/manifest.json). A shard belongs to the run whose manifest lists it
with the SHA-256 it has now: among the shards it wrote, as the run ended; for a run that never
ended, a planned shard whose content differs from what it was when the run started. No clock is
read, so nodes and a file server whose clocks disagree give every shard to its run. (Manifests
written before hashes were recorded are read by file times: the newest run that lists the shard
and started before it was written.) A shard no manifest claims (a folder from before runs
recorded manifests) goes to a run named after its shards' content. A folder with a summary.parquet and no shards (an
older layout) is one such run. Every table read from disk goes through the merge's migration
(tables/summary.py), so a store holds today's columns whatever version wrote them.
"""
import datetime
import functools
import glob
import hashlib
import json
import os

import pandas as pd
import pyarrow as pa

from duel.cell import contract, files

from duel.host.plan import layout
from duel.host.provenance import runs
from duel.host.store import archive
from duel.host.tables import breakdown, replicates, summary, variance
from duel.host.verdicts import pairs, statistics

UNRECORDED = "unrecorded-"


def results_folder(path):
    """The results folder of ``path`` (the folder itself or its ``results/``); StoreError where
    it holds neither shards, run manifests nor a summary."""
    folder = layout.results_folder(path)
    if folder is not None:
        return folder
    if not os.path.isdir(path):
        raise archive.StoreError("%s: no such folder" % path)
    raise archive.StoreError("%s holds no run: no shards/, runs/ or summary.parquet" % path)


def _manifests(results_dir):
    """(run id, record) of every manifest, oldest first; StoreError naming one that is not
    whole JSON."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(results_dir), layout.RUNS, "*", runs.MANIFEST)):
        try:
            record = runs.read(path)
        except (OSError, ValueError) as error:
            raise archive.StoreError("%s: a half-written or corrupt run manifest (%s)"
                                     % (path, contract.error_line(error)))
        found.append((os.path.basename(os.path.dirname(path)), record))
    return sorted(found, key=lambda item: item[1].get("started_at") or "")


def _as_recorded(results_dir, path):
    """A shard's path as manifests write it: relative to the working folder, 'results/...'."""
    return os.path.normpath(os.path.join(layout.RESULTS, os.path.relpath(path, results_dir)))


def _started(record):
    try:
        return datetime.datetime.fromisoformat(record["started_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return float("-inf")


def _claims(record, recorded, digest_now):
    """Whether the run of manifest ``record`` wrote the shard now at ``recorded`` (its path as
    manifests write it), by the shard's content; None where the manifest holds no hashes."""
    written = record.get("shard_sha256")
    if written is not None:
        return written.get(recorded) == digest_now()
    before = record.get("shards_before")
    if before is not None and record.get("status") == "running":
        planned = set(os.path.normpath(shard) for shard in record.get("planned_shards") or [])
        return recorded in planned and before.get(recorded) != digest_now()
    return None


def owners(results_dir, exclude=(), digest=files.file_sha256):
    """{run id: (manifest record or None, [shard paths])} for every shard under the folder; runs
    named in ``exclude`` (the run now starting) claim nothing. ``digest``: a shard's SHA-256."""
    shards = sorted(path for path in glob.glob(os.path.join(glob.escape(results_dir), layout.SHARDS,
                                                            "**", "*.parquet"), recursive=True)
                    if ".partial-" not in path)
    manifests = [(run_id, record) for run_id, record in _manifests(results_dir)
                 if run_id not in exclude]
    found, unclaimed = {}, []
    for path in shards:
        recorded, written = _as_recorded(results_dir, path), os.path.getmtime(path)
        owner = None
        for run_id, record in reversed(manifests):
            by_content = _claims(record, recorded, lambda: digest(path))
            if by_content is None:  # an older manifest: by file times
                claimed = set(record.get("shards") or [])
                if record.get("status") == "running":
                    claimed |= set(record.get("planned_shards") or [])
                by_content = recorded in set(os.path.normpath(shard) for shard in claimed) and \
                    _started(record) <= written + 1
            if by_content:
                owner = (run_id, record)
                break
        if owner is None:
            unclaimed.append(path)
        else:
            found.setdefault(owner[0], (owner[1], []))[1].append(path)
    if unclaimed:
        run_id = UNRECORDED + _content_id(unclaimed, digest)
        found[run_id] = (None, unclaimed)
    return found


def _content_id(paths, digest):
    combined = hashlib.sha256()
    for path in sorted(paths):
        combined.update(digest(path).encode())
    return combined.hexdigest()[:16]


def shard_rows(results_dir, paths, digest=files.file_sha256):
    """The rows of shards as one Arrow table in today's columns, with shard and shard_sha256;
    StoreError naming a shard that cannot be read."""
    frames = []
    for path in paths:
        try:
            frame = summary.migrated(summary.read_shard(path).to_pandas())
        except summary.ShardError as error:
            raise archive.StoreError(str(error).split(". Delete it")[0])
        frame["shard"] = os.path.relpath(path, results_dir)
        frame["shard_sha256"] = digest(path)
        frames.append(frame)
    return _table(pd.concat(frames, ignore_index=True))


def summary_rows(results_dir):
    """An older layout's summary.parquet as rows of one run (its file is its one 'shard')."""
    path = os.path.join(results_dir, layout.SUMMARY)
    try:
        frame = summary.read_summary(path)
    except Exception as error:  # any failure to read names the file
        raise archive.StoreError("%s: not a readable summary (%s)"
                                 % (path, contract.error_line(error)))
    frame["shard"] = layout.SUMMARY
    frame["shard_sha256"] = files.file_sha256(path)
    return _table(frame)


def _table(frame):
    keep = contract.NAMES + [name for name in frame.columns if name not in contract.NAMES]
    return pa.Table.from_pandas(frame[keep], preserve_index=False)


def headline(frame):
    """The run's verdict in one line: per framework pair and pair of modes, the
    geometric-mean ratio (< 1: the first framework faster) and the points each framework
    clearly wins ('eager/function 0.93 (PT 3, TF 1, open 2)')."""
    try:
        judged = statistics.pair_summary(statistics.point_ratios(frame))
    except Exception as error:  # a run whose rows cannot be paired still gets stored
        return "no verdict (%s)" % contract.error_line(error)
    parts = []
    for framework_pair, rows in pairs.in_table(judged):
        for _, pair in rows.iterrows():
            if pd.isna(pair["geomean_ratio"]):
                continue
            parts.append("%s %.2f (%s, open %d)" % (
                "/".join(pair[mode] for mode in framework_pair.modes), pair["geomean_ratio"],
                ", ".join("%s %d" % (suffix[1:].upper(), pair[name + "_clearly_faster"])
                          for name, suffix in zip(framework_pair.frameworks,
                                                  framework_pair.suffixes)),
                pair["not_clear"]))
    return "; ".join(parts) or "no pair of frameworks"


def _distinct(frame, column):
    return ",".join(sorted(frame[column].dropna().astype(str).unique()))


def describer(run_id, record, machine, source):
    """The function that makes run ``run_id``'s one-row record (archive.RUN_SCHEMA) from all its
    rows, in the store's columns."""
    def describe(frame):
        counted = replicates.counted(frame)
        first = counted.iloc[0] if len(counted) else frame.iloc[0]
        noise = breakdown.disturbance(frame)
        where = (record or {}).get("machine") or {}
        started = (record or {}).get("started_at") or _distinct(frame, "started_at").split(",")[0]
        return {
            "run_id": run_id,
            "store_version": archive.VERSION,
            "started_at": started or None,
            "ended_at": (record or {}).get("ended_at"),
            "status": _status(record),
            "machine": machine or where.get("name") or first.get("hostname"),
            "hostname": where.get("hostname") or first.get("hostname"),
            "cpu_model": where.get("cpu_model") or first.get("cpu_model"),
            "cpu_flags": where.get("cpu_flags") or first.get("cpu_flags"),
            "logical_cpus": where.get("logical_cpus") or _int(first.get("logical_cpus")),
            "gpus": ", ".join(where.get("gpus") or []) or _distinct(frame, "device_name"),
            "git_commit": (record or {}).get("git_commit") or _distinct(frame, "git_commit"),
            "git_dirty": (record or {}).get("git_dirty"),
            "eras": _distinct(frame, "era"),
            "devices": _distinct(frame, "device"),
            "threads": _distinct(frame, "threads"),
            "lock_sha256": _distinct(frame, "lock_sha256"),
            "points": int(len(counted.drop_duplicates(replicates.POINT_IDENTITY))),
            "processes": int(counted["replicate"].max()) if len(counted) else 0,
            "headline": headline(frame),
            "counted_points": noise.points,
            "disturbed_points": noise.disturbed,
            "steal_share": noise.steal_share,
            "noisy": noise.noisy,
            **variance.run_figures(frame),
            "manifest": json.dumps(record, sort_keys=True) if record else None,
            "source": os.path.abspath(source),
            "added_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
    return describe


def _int(value):
    return None if value is None or pd.isna(value) else int(value)


def add_folder(store, path, machine=None, exclude=(), create=False, restore=()):
    """Add every run of the results folder ``path`` not yet stored; [(run id, shards added)].
    Every new shard is read before anything is added: one that cannot be read stops the add. A
    run `duel store rm` took out is skipped, and said, unless named in ``restore``. ``create``:
    make the store where there is none (else that is a StoreError: a mistyped path)."""
    if machine is not None and not archive.RUN_ID.match(machine):
        raise archive.StoreError("%r is not a machine name (letters, digits, '.', '_', '-')"
                                 % machine)
    results_dir = results_folder(path)
    if create:
        archive.create(store)
    else:
        try:
            archive.version(store)
        except archive.StoreError as error:
            raise archive.StoreError("%s; add --create to make a new store there" % error)
    for run_id in restore:
        archive.restore(store, run_id)
    removed = archive.removed_runs(store)
    stored = archive.stored_shards(store)
    digest = functools.lru_cache(maxsize=None)(files.file_sha256)  # each shard read once
    found = owners(results_dir, exclude, digest)
    tables = {}
    for run_id, (record, paths) in found.items():
        if run_id in removed:
            archive.say("run %s not added: duel store rm took it out of %s on %s (duel store add "
                        "%s --restore %s adds it back)" % (run_id, store, removed[run_id], path,
                                                         run_id))
            continue
        fresh = [shard for shard in paths if digest(shard) not in stored]
        if fresh:
            tables[run_id] = shard_rows(results_dir, fresh, digest)
    if not found and os.path.exists(os.path.join(results_dir, layout.SUMMARY)):
        table = summary_rows(results_dir)
        run_id = UNRECORDED + table.column("shard_sha256")[0].as_py()[:16]
        found[run_id] = (None, [])
        if table.column("shard_sha256")[0].as_py() not in stored and run_id not in removed:
            tables[run_id] = table
    added = []
    for run_id in sorted(tables, key=lambda run: ((found[run][0] or {}).get("started_at") or "",
                                                  run)):
        count = archive.add(store, run_id, tables[run_id],
                            describer(run_id, found[run_id][0], machine, results_dir))
        added.append((run_id, count))
    return added


def _status(record):
    """success or error as the run ended; interrupted for a run whose manifest never got its
    end (killed), unrecorded without a manifest."""
    if not record:
        return "unrecorded"
    status = record.get("status")
    return "interrupted" if status == "running" else status
