"""A job's processes: which of its rows count, and whether a disturbed point gets a fresh one.

A job measures its cell in a fresh process (attempt 1), which judges each point as it measures
it and measures a disturbed point again at once (conditions.Judge, sweep.run_sweep). A point
still disturbed when that process ends runs again in another fresh process, up to
``Limits.attempts`` processes, while the run's budget of fresh processes lasts: a process costs
its imports and its model build, a re-measurement only the point. Every row is kept; per point
only the last row is ``counted``. Python 3.6-compatible.
"""
import os

from .conditions import slow_process


def point_of(row):
    """A row's point, as sweep.Point: (batch size, length, method, mode)."""
    return (row["batch_size"], row["seq_len"], row["method"], row["mode"])


def judge(rows, limits):
    """Mark ``counted`` on each point's last row of ``rows`` (every process's rows, in order).
    Returns the points whose counted row is disturbed so that it calls for measuring again
    (conditions.slow_process) and may still run in a fresh process (none once
    ``limits.attempts`` processes have run)."""
    last = {}
    for row in rows:
        last[point_of(row)] = row
    again = set()
    for row in rows:
        row["counted"] = last[point_of(row)] is row
        if row["counted"] and slow_process(row, limits) and (row["attempt"] or 1) < limits.attempts:
            again.add(point_of(row))
    return again


def take_fresh_process(folder):
    """Take one fresh process from the run's budget in ``folder`` (its ``budget`` file holds how
    many the run may start; each one taken is a file ``token-N`` created exclusively, so jobs on
    many nodes of a shared file system share one budget). No folder: no budget, always True."""
    if not folder:
        return True
    try:
        with open(os.path.join(folder, "budget")) as handle:
            budget = int(handle.read().strip() or 0)
    except (IOError, OSError, ValueError):
        return True
    for number in range(budget):
        try:
            os.close(os.open(os.path.join(folder, "token-%d" % number),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except OSError:  # taken by another job
            continue
    return False


def write_budget(folder, processes):
    """Start the run's budget of ``processes`` fresh processes in ``folder`` (the tokens of an
    earlier run are returned)."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.startswith("token-"):
            os.remove(os.path.join(folder, name))
    with open(os.path.join(folder, "budget"), "w") as handle:
        handle.write("%d\n" % processes)
