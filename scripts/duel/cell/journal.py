"""A measuring process's points as it measures them, so that a kill loses none of them.

The process writes one JSON line when it starts (its pid, the points it will measure, the
columns every row shares), one when it begins a point (when, and the point's time limit) and one
per row it measures, each flushed at once. Its job follows the file while the process runs (to
stop a point past its limit, reading only what was added) and reads it whole after it ends: a process killed mid-sweep leaves every finished
point's rows here, and the point it was running becomes a row of its own (``lost_row``).
Python 3.6-compatible.
"""
import json
import os
import signal
import time
from collections import namedtuple

from . import contract

# ``mode_columns``: {mode: the columns only that mode's rows have} (its settings' digest)
Record = namedtuple("Record", "pid planned columns rows begun mode_columns")


def path_of(output):
    """The journal beside a measuring process's output."""
    return output + ".journal"


def _plain(value):
    """numpy scalars and arrays as JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError("%r is not JSON" % (value,))


class Journal(object):
    """The measuring process's side: append, flush, never rewrite."""

    def __init__(self, path, planned, columns, limit_of=None, mode_columns=None):
        self.handle = open(path, "a")
        self.limit_of = limit_of
        self._write({"pid": os.getpid(), "planned": [list(point) for point in planned],
                     "columns": columns, "mode_columns": mode_columns or {}})

    def begin(self, point):
        limit_s = self.limit_of(point) if self.limit_of else None
        self._write({"begin": list(point), "at": time.time(), "limit_s": limit_s})

    def row(self, row):
        self._write({"row": row})

    def close(self):
        if self.handle is not None:
            self.handle.close()

    def _write(self, record):
        if self.handle is None:
            return
        try:
            self.handle.write(json.dumps(record, default=_plain) + "\n")
            self.handle.flush()
        except (IOError, OSError):  # a full disk: the measurement goes on, unjournalled
            self.handle = None


def read(path):
    """What a journal holds (a Record): a line cut short by a kill is left out."""
    pid, planned, columns, rows, begun, mode_columns = None, [], {}, [], [], {}
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except (IOError, OSError):
        lines = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "pid" in record:
            pid, columns = record["pid"], record.get("columns") or {}
            mode_columns = record.get("mode_columns") or {}
            planned = [tuple(point) for point in record.get("planned") or []]
        elif "begin" in record:
            begun.append((tuple(record["begin"]), record["at"], record.get("limit_s")))
        elif "row" in record:
            rows.append(record["row"])
    return Record(pid, planned, columns, rows, begun, mode_columns)


def running(record):
    """The point the process began last and has no row for (each begin is followed by one
    row): (point, began at, limit s), or None."""
    return record.begun[-1] if len(record.begun) > len(record.rows) else None


class Follower(object):
    """The job's look at a journal while its process runs: only the bytes added since the last
    look are read, and only the lines of begun points parsed (a row's line holds its samples)."""

    def __init__(self, path):
        self.path, self.offset, self.partial, self.current = path, 0, b"", None

    def running(self):
        """As ``running``, from what the process has written so far."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                added = handle.read()
        except (IOError, OSError):
            return self.current
        self.offset += len(added)
        lines = (self.partial + added).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            if line.startswith(b'{"begin"'):
                begun = json.loads(line.decode("utf-8"))
                self.current = (tuple(begun["begin"]), begun["at"], begun.get("limit_s"))
            elif line.startswith(b'{"row"'):
                self.current = None
        return self.current


def left(record):
    """The planned points the process never began."""
    begun = set(point for point, _, _ in record.begun)
    return [point for point in record.planned if point not in begun]


def signal_name(status):
    """'SIGKILL' for a process ended by signal 9 (a subprocess status of -9)."""
    try:
        return signal.Signals(-status).name
    except (ValueError, AttributeError):
        return "signal %d" % -status


def lost_row(record, point, status, timed_out_after_s=None, limit_s=None, out_of_memory=False):
    """The row of the point a measuring process was running when it ended: ``timeout`` when its
    job stopped it past its limit, ``oom`` when the kernel's OOM killer ended it, ``killed`` by
    another signal (named), else ``error`` with the exit status."""
    row = contract.empty_row()
    row.update((name, value) for name, value in record.columns.items() if name in row)
    row.update(batch_size=point[0], seq_len=point[1], method=point[2],
               process_modes=record.columns.get("mode"))
    if len(point) > 3 and point[3]:
        row["mode"] = point[3]
        row.update(record.mode_columns.get(point[3]) or {})
    if timed_out_after_s is not None:
        row["status"] = "timeout"
        row["message"] = ("stopped after %.0f s, past the point's time limit of %.0f s (config "
                          "point_time_limit times the plan's estimate of the point)"
                          % (timed_out_after_s, limit_s))
    elif out_of_memory:
        row["status"] = "oom"
        row["message"] = ("the kernel's OOM killer ended the measuring process (%s) during this "
                          "point" % signal_name(status))
    elif status < 0:
        row["status"] = "killed"
        row["message"] = "the measuring process was killed by %s during this point" % (
            signal_name(status))
    else:
        row["status"] = "error"
        row["message"] = ("the measuring process exited with status %d during this point (its "
                          "log has the traceback)" % status)
    return row


def oom_kills(cgroup_file="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """How many processes the kernel's OOM killer has ended in this process's memory cgroup:
    cgroup v2's ``memory.events``, else the v1 memory controller's ``memory.oom_control`` (both
    say ``oom_kill N``); None where neither is readable."""
    candidates = []
    try:
        with open(cgroup_file) as handle:
            for line in handle:
                parts = line.strip().split(":", 2)
                if len(parts) != 3:
                    continue
                path = parts[2].lstrip("/")
                if parts[0] == "0":
                    candidates.append(os.path.join(root, path, "memory.events"))
                elif "memory" in parts[1].split(","):
                    candidates.append(os.path.join(root, "memory", path, "memory.oom_control"))
    except (IOError, OSError):
        return None
    for events in candidates:
        try:
            with open(events) as counts:
                for count in counts:
                    name, _, value = count.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (IOError, OSError, ValueError):
            continue
    return None
    return None
