"""The conditions a cell's process times under, set the same way for both frameworks.

Between-process noise is the largest noise on small machines (README, "Replicates"); these
settings remove what can be removed and record the rest, in every shard:

- Cores: the process is bound to a fixed set of ``threads`` CPUs (``cpu_affinity``), the first
  of those it may use, and OpenMP threads are bound to places on them (``OMP_PROC_BIND``,
  ``OMP_PLACES``; PyTorch's CPU kernels run on OpenMP, TensorFlow's on its own pools, which the
  process binding covers). Set before the framework is imported.
- Thread pools: intra-op and inter-op pools both get ``threads`` (the adapters).
- A canary: a fixed numpy matrix product (the same in both frameworks and eras) timed just
  before and just after each point (``canary_before_ms``, ``canary_after_ms``), so a reader
  sees when the machine changed speed during a point.
- What else ran: the host's steal time and other processes' CPU time on the point's CPUs
  (``steal_ms``, ``other_cpu_ms``, from /proc/stat). A point whose canary, steal or neighbours
  pass the limits (``disturbance``) is marked and runs again in a fresh process
  (scripts/cell/run_cell.py); every attempt's row is kept.
- Garbage collection: collected before the samples and switched off while they are taken, as
  timeit (and so the timeit method) and torch.utils.benchmark do; collections that still fall
  inside the samples (a framework calling gc.collect itself) are counted per point
  (``gc_collections``). Restored afterwards, also when a call fails.

Python 3.6-compatible in-cell code.
"""
import contextlib
import gc
import os
import time
from collections import namedtuple

import numpy as np

GC_POLICY = "collected before, disabled while timing"
OPENMP_BINDING = {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}


def pinned_cpus(threads, available=None):
    """The ``threads`` CPUs a cell binds to: the lowest of those the process may use."""
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else []
    return sorted(available)[:threads]


def describe_cpus(cpus):
    """[0, 1, 2, 5] -> '0-2,5' (the cpuset notation)."""
    ranges, start, previous = [], None, None
    for cpu in sorted(cpus):
        if start is None:
            start = previous = cpu
        elif cpu == previous + 1:
            previous = cpu
        else:
            ranges.append((start, previous))
            start = previous = cpu
    if start is not None:
        ranges.append((start, previous))
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def bind_process(threads, environ=None):
    """Bind this process to its CPUs and OpenMP threads to places, before any framework is
    imported; returns the columns that record it."""
    environ = os.environ if environ is None else environ
    cpus = pinned_cpus(threads)
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:  # a container or scheduler may forbid it: record what we have
            cpus = sorted(os.sched_getaffinity(0))
    for name, value in OPENMP_BINDING.items():
        environ.setdefault(name, value)
    return {
        "cpu_affinity": describe_cpus(cpus),
        "omp_binding": ",".join("%s=%s" % (name, environ[name]) for name in sorted(OPENMP_BINDING)),
        "gc_policy": GC_POLICY,
    }


@contextlib.contextmanager
def gc_paused(counter):
    """Collect, then keep the collector off while the block runs; ``counter['collections']``
    counts the collections that happened anyway."""
    def count(phase, info):
        if phase == "start":
            counter["collections"] = counter.get("collections", 0) + 1

    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.callbacks.append(count)
    try:
        yield counter
    finally:
        gc.callbacks.remove(count)
        if was_enabled:
            gc.enable()


CANARY_SIZE = 192
CANARY_RUNS = 5


def canary_ms(size=CANARY_SIZE, runs=CANARY_RUNS):
    """The median time (ms) of a fixed float64 matrix product: the machine's speed right now.
    One untimed product first: a process's first one starts the BLAS threads (tens of ms)."""
    matrix = np.random.RandomState(0).standard_normal((size, size))
    np.dot(matrix, matrix)
    times = []
    for _ in range(runs):
        before = time.perf_counter()
        np.dot(matrix, matrix)
        times.append((time.perf_counter() - before) * 1000.0)
    return float(np.median(times))


def cpu_ticks(cpus, path="/proc/stat"):
    """(busy, steal) clock ticks of ``cpus`` since boot, from /proc/stat's per-CPU lines; None
    where there is no /proc/stat. Busy is user + nice + system + irq + softirq (guest time is
    already inside user); steal is the time the host ran something else on those CPUs."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except (IOError, OSError):
        return None
    wanted = set(cpus)
    busy = steal = 0
    for line in lines:
        name, _, values = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in wanted):
            continue
        fields = [int(value) for value in values.split()]
        fields += [0] * (8 - len(fields))
        busy += fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
        steal += fields[7]
    return busy, steal


def own_cpu_s():
    """CPU time this process (all its threads) has used, user + system, in seconds."""
    times = os.times()
    return times[0] + times[1]


class CpuWatch(object):
    """What else used a point's CPUs while it ran: the host's steal time and the CPU time of
    every other process on the CPUs this one is bound to (their busy time less this process's
    own), both in milliseconds; None where /proc/stat cannot be read. Clock ticks are 10 ms, so
    a figure below a few ticks is noise."""

    def __init__(self, cpus=None):
        if cpus is None:
            cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.cpus = cpus
        self.tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0

    def start(self):
        self._ticks, self._own = cpu_ticks(self.cpus), own_cpu_s()
        return self

    def stop(self):
        """{'steal_ms': ..., 'other_cpu_ms': ...} since ``start``."""
        ticks, own = cpu_ticks(self.cpus), own_cpu_s()
        if ticks is None or self._ticks is None:
            return {"steal_ms": None, "other_cpu_ms": None}
        busy_ms = (ticks[0] - self._ticks[0]) * self.tick_ms
        return {"steal_ms": (ticks[1] - self._ticks[1]) * self.tick_ms,
                "other_cpu_ms": max(0.0, busy_ms - (own - self._own) * 1000.0)}


# When a point counts as disturbed (config key disturbance): the host stole more than
# ``max_steal_share`` of its CPUs' time, other processes used more than ``max_other_share`` of
# it, or the canary around it ran ``max_canary_ratio`` times slower than the fastest canary its
# job saw (a limit of 0 is off). A disturbed point runs again in a fresh process, ``attempts``
# processes at most.
Limits = namedtuple("Limits", "max_steal_share max_other_share max_canary_ratio attempts")
LIMITS = Limits(max_steal_share=0.05, max_other_share=0.10, max_canary_ratio=1.5, attempts=3)


def disturbance(row, baseline_canary_ms, limits=LIMITS):
    """Why the point ``row`` (contract columns) was disturbed, in a few words, or None."""
    if row.get("status") != "ok" or not row.get("point_wall_s"):
        return None
    capacity_ms = row["point_wall_s"] * 1000.0 * max(1, row.get("threads") or 1)
    reasons = []
    for column, share, what in (("steal_ms", limits.max_steal_share, "host steal"),
                                ("other_cpu_ms", limits.max_other_share, "other processes")):
        value = row.get(column)
        if share and value is not None and value > share * capacity_ms:
            reasons.append("%s %.0f%% of its CPU time" % (what, 100.0 * value / capacity_ms))
    canaries = [row.get(name) for name in ("canary_before_ms", "canary_after_ms")
                if row.get(name) is not None]
    if canaries and baseline_canary_ms and limits.max_canary_ratio and \
            max(canaries) > limits.max_canary_ratio * baseline_canary_ms:
        reasons.append("canary %.1fx the job's fastest" % (max(canaries) / baseline_canary_ms))
    return "; ".join(reasons) or None
