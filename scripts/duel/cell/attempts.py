"""A job's attempts: which of its rows count, and which points run again in a fresh process.

A job measures its cell in a fresh process (attempt 1). A point that process measured while the
host stole its CPUs, other processes ran on them or the canary slowed (conditions.disturbance)
is disturbed: it runs again in another fresh process, up to ``Limits.attempts`` processes in all.
Every attempt's row is kept; per point only the last attempt's row is ``counted``, so a
disturbed process's figure never votes while a later one exists. Python 3.6-compatible.
"""
from . import conditions


def point_of(row):
    return (row["batch_size"], row["seq_len"], row["method"])


def fastest_canary(rows):
    """The fastest canary in any of ``rows``: the job's undisturbed machine speed."""
    canaries = [row[name] for row in rows for name in ("canary_before_ms", "canary_after_ms")
                if row.get(name)]
    return min(canaries) if canaries else None


def judge(rows, limits=conditions.LIMITS):
    """Mark ``rows`` (every attempt so far, in order) in place: ``disturbed`` against the job's
    fastest canary, ``counted`` on each point's last row. Returns the points whose counted row
    is disturbed and may still run again (none once ``limits.attempts`` processes have run)."""
    baseline = fastest_canary(rows)
    last = {}
    for row in rows:
        row["disturbed"] = conditions.disturbance(row, baseline, limits)
        last[point_of(row)] = row
    again = set()
    for row in rows:
        row["counted"] = last[point_of(row)] is row
        if row["counted"] and row["disturbed"] and (row["attempt"] or 1) < limits.attempts:
            again.add(point_of(row))
    return again
