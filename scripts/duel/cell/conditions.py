"""The conditions a cell's process times under, set the same way for both frameworks.

Between-process noise is the largest noise on small machines (docs/method.md, "Replicates and
rounds"); these settings remove what can be removed and record the rest, in every shard:

- Cores: the process is bound to a fixed set of ``threads`` CPUs (``cpu_affinity``), the first
  of those it may use, and OpenMP threads are bound to places on them (``OMP_PROC_BIND``,
  ``OMP_PLACES``; PyTorch's CPU kernels run on OpenMP, TensorFlow's on its own pools, which the
  process binding covers). Set before the framework is imported.
- Thread pools: intra-op and inter-op pools both get ``threads`` (the adapters).
- A canary: a fixed numpy matrix product (the same in both frameworks and eras) timed just
  before and just after each point (``canary_before_ms``, ``canary_after_ms``), so a reader
  sees when the machine changed speed during a point.
- What else ran: the host's steal time and other processes' CPU time on the point's CPUs
  (``steal_ms``, ``other_cpu_ms``, from /proc/stat). A point whose steal, neighbours or canary
  pass the limits (``disturbance``) is marked and measured again, first in the same process
  (sweep.py), then in a fresh one (duel/cell/commands/run_cell.py); every row is kept.
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


# The CPUs bind_process bound this process to: the point's CPUs, which CpuWatch watches. OpenMP
# then binds the main thread to the first of them alone, so its own affinity is not the answer.
BOUND_CPUS = []


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
    BOUND_CPUS[:] = cpus or []
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


# The canary: a small float64 product, below the size at which BLAS starts its threads, so it
# runs in the calling thread alone. A product big enough to be threaded meets the framework's
# own threads still spinning after a point, and its time jumps between two values (one core or
# two) with nothing else running.
CANARY_SIZE = 64
CANARY_PRODUCTS = 25
CANARY_RUNS = 5


def canary_ms(size=CANARY_SIZE, runs=CANARY_RUNS, products=CANARY_PRODUCTS):
    """The median time (ms) of ``products`` fixed matrix products, over ``runs``: the machine's
    speed right now. One untimed product first (a process's first one loads BLAS)."""
    matrix = np.random.RandomState(0).standard_normal((size, size))
    np.dot(matrix, matrix)
    times = []
    for _ in range(runs):
        before = time.perf_counter()
        for _ in range(products):
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


# A clock tick of /proc/stat (ms): what one reading of a CPU's time may be off by.
TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0


class CpuWatch(object):
    """What else used a point's CPUs while it ran: the host's steal time and the CPU time of
    every other process on the CPUs this one is bound to (BOUND_CPUS; their busy time less
    this process's
    own), both in milliseconds; None where /proc/stat cannot be read. Clock ticks are 10 ms, so
    a figure below a few ticks is noise."""

    def __init__(self, cpus=None):
        if cpus is None:
            cpus = list(BOUND_CPUS) or (sorted(os.sched_getaffinity(0))
                                        if hasattr(os, "sched_getaffinity") else [])
        self.cpus = cpus
        self.tick_ms = TICK_MS

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


class SampleWatch(object):
    """Judges each timed sample by what else used its CPUs while it ran: a sample during which
    the host surely stole more than ``max_steal_share`` of its CPUs' time, or other processes
    surely used more than ``max_other_share`` of one CPU, is *marked*: kept, and left out of the
    point's figure (timing.time_duel takes another in its place). Steal comes in bursts shorter
    than a point, so leaving out the samples a burst hit keeps the point without measuring it
    again whole.

    Surely: /proc/stat counts whole clock ticks per CPU, so a difference of two readings is
    off by less than one tick per CPU; a sample is marked only when its counted time less
    that margin still passes the share. A short sample is therefore marked only by a large
    burst, never by one tick. Its own CPU time comes from the process clock (nanoseconds).
    Reading /proc/stat takes tens of microseconds, outside the timed call."""

    def __init__(self, limits, cpus=None, path="/proc/stat"):
        self.limits, self.path = limits, path
        self.cpus = cpus if cpus is not None else (
            list(BOUND_CPUS) or (sorted(os.sched_getaffinity(0))
                                 if hasattr(os, "sched_getaffinity") else []))
        self.threads = max(1, len(self.cpus))
        self.tick_ms = TICK_MS
        self.margin_ms = self.tick_ms * max(1, len(self.cpus))
        self.kept_steal_ms = self._kept_other_ms = 0.0
        self._all_steal_ms = self._all_other_ms = 0.0
        self._ticks = self._own = None

    def start(self):
        self._ticks, self._own = cpu_ticks(self.cpus, self.path), time.process_time()

    def stop(self, wall_ms):
        """Why the sample of ``wall_ms`` that ``start`` began is marked, or None; a sample that
        is kept adds its steal and neighbours' time to ``kept_steal_ms`` / ``kept_other_ms``."""
        ticks, own = cpu_ticks(self.cpus, self.path), time.process_time()
        if ticks is None or self._ticks is None:
            return None
        steal = (ticks[1] - self._ticks[1]) * self.tick_ms
        # signed: a sample's tick count is as often below its true time as above it, so the
        # sum over the kept samples is unbiased only if no sample's share is cut at zero
        other = (ticks[0] - self._ticks[0]) * self.tick_ms - (own - self._own) * 1000.0
        reason = sample_mark(steal, other, wall_ms, self.threads, self.margin_ms, self.limits)
        self._all_steal_ms += steal
        self._all_other_ms += other
        if reason is None:
            self.kept_steal_ms += steal
            self._kept_other_ms += other
        return reason

    @property
    def kept_other_ms(self):
        return max(0.0, self._kept_other_ms)

    def keep_all(self):
        """Count every sample as kept (a point that could not get enough clean ones is measured
        on all of them, and judged on all of them)."""
        self.kept_steal_ms, self._kept_other_ms = self._all_steal_ms, self._all_other_ms


def sample_mark(steal_ms, other_ms, wall_ms, threads, margin_ms, limits):
    """'steal' or 'other' where a sample surely passed a share (SampleWatch), else None."""
    if limits.max_steal_share and steal_ms - margin_ms > limits.max_steal_share * wall_ms * threads:
        return "steal"
    if limits.max_other_share and other_ms - margin_ms > limits.max_other_share * wall_ms:
        return "other"
    return None


# When a point counts as disturbed (config key disturbance; a limit of 0 is off):
# - the host stole more than ``max_steal_share`` of its CPUs' time;
# - other processes used more than ``max_other_share`` of one CPU's time on its CPUs: parallel
#   work runs at the pace of its slowest core, so a neighbour on one core slows the whole point;
# - its canary is an outlier against the canary's own spread in this process: a robust score
#   (the log of the faster of its two canaries, less the median log of the readings before it,
#   over 1.4826 median absolute deviations) above ``max_canary_score``. The faster: a slowdown
#   that lasts through the point slows both, while one canary alone (a millisecond) also sees
#   blips that a point of a second does not feel, such as the framework's threads still spinning. The readings are a short
#   calibration when the model is built (``calibrate``) and the canaries of the points before it.
#   A score is a distance in the host's own noise, so it means the same on a quiet and a noisy
#   host, where a ratio to the fastest reading flags most points on a noisy one.
# A disturbed point is measured again at once in the same process, ``remeasures`` times at most
# (a neighbour or a steal burst is an event in time), then in a fresh process of the job,
# ``attempts`` processes at most, while the run's budget of fresh processes lasts
# (duel/cell/attempts.py).
Limits = namedtuple("Limits", "max_steal_share max_other_share max_canary_score calibrate "
                              "remeasures attempts")
LIMITS = Limits(max_steal_share=0.05, max_other_share=0.05, max_canary_score=3.5, calibrate=True,
                remeasures=2, attempts=2)
# The rule every row of this code was judged by (column disturbance_rule), which names its
# canary too; rows judged by a ratio to the job's fastest canary ("canary-ratio") timed a
# threaded 192x192 product.
RULE = "canary-score"
# Readings taken back to back once the model is built, and the fewest readings a score needs.
CALIBRATION_READINGS = 15
MIN_READINGS = 5
# The smallest spread a score divides by (log scale, about 2%): a host whose canary hardly
# varies must not turn a clock tick into an outlier.
SPREAD_FLOOR = 0.02


def canary_spread(readings):
    """(median ms, robust spread on the log scale) of canary ``readings``; the spread is 1.4826
    median absolute deviations of their logs (a standard deviation, were they normal)."""
    logs = np.log(np.asarray(readings, dtype=float))
    center = float(np.median(logs))
    return float(np.exp(center)), 1.4826 * float(np.median(np.abs(logs - center)))


def canary_score(value_ms, readings):
    """How many robust spreads ``value_ms`` lies above the median of ``readings``; None with
    fewer than MIN_READINGS readings."""
    if value_ms is None or len(readings) < MIN_READINGS:
        return None
    center_ms, spread = canary_spread(readings)
    return (np.log(value_ms) - np.log(center_ms)) / max(spread, SPREAD_FLOOR)


def disturbance(row, readings, limits=LIMITS):
    """(why the point ``row`` was disturbed in a few words or None, its canary score or None),
    the canary judged against ``readings`` (the canary readings before the point)."""
    canaries = [row.get(name) for name in ("canary_before_ms", "canary_after_ms")
                if row.get(name) is not None]
    score = canary_score(min(canaries), readings) if canaries else None
    if row.get("status") != "ok" or not row.get("point_wall_s"):
        return None, score
    wall_ms = row["point_wall_s"] * 1000.0
    reasons = []
    steal, other = row.get("steal_ms"), row.get("other_cpu_ms")
    if row.get("kept_steal_ms") is not None and row.get("samples"):
        # samples judged one by one (SampleWatch): the point is judged by those it kept, and
        # as surely as a sample is (their ticks less a tick per CPU), since a few short
        # samples sum to less time than one tick of a neighbour is worth
        margin = TICK_MS * max(1, row.get("threads") or 1)
        steal = max(0.0, row["kept_steal_ms"] - margin)
        other = max(0.0, (row.get("kept_other_cpu_ms") or 0.0) - margin)
        wall_ms = float(sum(row["samples"]))
    threads = max(1, row.get("threads") or 1)
    if limits.max_steal_share and steal is not None and \
            steal > limits.max_steal_share * wall_ms * threads:
        reasons.append("host steal %.0f%% of its CPU time" % (100.0 * steal / (wall_ms * threads)))
    if limits.max_other_share and other is not None and other > limits.max_other_share * wall_ms:
        reasons.append("other processes %.0f%% of a CPU" % (100.0 * other / wall_ms))
    if limits.max_canary_score and score is not None and score > limits.max_canary_score:
        reasons.append("canary score %.1f" % score)
    return "; ".join(reasons) or None, score


def slow_process(row, limits=LIMITS):
    """Whether ``row`` is worth measuring again, in this process or a fresh one. A point whose
    samples were judged one by one (SampleWatch) left its steal and neighbours out already:
    only a canary that says the process itself ran slow calls for it again. Other points (the
    timeit method, deployed runners): any disturbance."""
    if not row.get("disturbed"):
        return False
    if row.get("kept_steal_ms") is None:
        return True
    score = row.get("canary_score")
    return bool(limits.max_canary_score and score is not None and score > limits.max_canary_score)


class Judge(object):
    """Judges each point a process measures as it is measured (``disturbance``), against the
    canary readings this process has taken: its calibration, then every point's canaries."""

    def __init__(self, limits=LIMITS):
        self.limits = limits
        self.calibration = []
        self.readings = []

    def calibrate(self, readings=CALIBRATION_READINGS):
        """The canary's spread on this host right now, before the first point."""
        if self.limits.calibrate:
            self.calibration = [canary_ms() for _ in range(readings)]
            self.readings = list(self.calibration)

    def __call__(self, row):
        """Mark ``row`` (its disturbance columns); returns why it was disturbed, or None
        (slow_process says whether that calls for measuring it again)."""
        reason, score = disturbance(row, self.readings, self.limits)
        center_ms, spread = canary_spread(self.readings) if self.readings else (None, None)
        row.update(disturbed=reason, canary_score=score, canary_center_ms=center_ms,
                   canary_spread=spread, canary_calibration_ms=list(self.calibration),
                   disturbance_rule=RULE)
        self.readings += [row[name] for name in ("canary_before_ms", "canary_after_ms")
                          if row.get(name) is not None]
        return reason
