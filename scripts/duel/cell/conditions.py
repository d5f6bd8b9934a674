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
    """The median time (ms) of a fixed float64 matrix product: the machine's speed right now."""
    matrix = np.random.RandomState(0).standard_normal((size, size))
    times = []
    for _ in range(runs):
        before = time.perf_counter()
        np.dot(matrix, matrix)
        times.append((time.perf_counter() - before) * 1000.0)
    return float(np.median(times))
