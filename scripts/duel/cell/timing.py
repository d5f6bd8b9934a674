"""Timer -> Measurement: the two timing methods, shared by both frameworks.

A framework adapter hands in a zero-argument ``call`` (one forward pass on a fixed input) and a
``synchronise`` function (a no-op on the CPU, a device barrier on an accelerator); nothing here
knows which framework runs.

- ``timeit`` reproduces the October 2019 Hugging Face script on purpose, flaws included, so its
  numbers can be rebuilt: one untimed call, then ``timeit.repeat(call, repeat=30, number=3)``, and
  the reported value is the mean per call, ``sum(totals) / repeat / number``. It never
  synchronises a device (on a GPU that times kernel launches, not kernels: the point of keeping it).
- ``duel`` is the honest default: warm-up calls on the same shapes, a device barrier before every
  clock read, one call per sample, and a run length sized by the call's cost against the
  point's fixed cost (planned_samples: Kalibera and Jones), at least ``min_samples`` samples and
  ``min_time_s`` seconds, capped by ``max_samples`` and ``max_time_s``; the garbage collector off
  while it samples (conditions.gc_paused); each sample judged by what else used its CPUs.

Every raw sample is kept (milliseconds per call); statistics are derived from them. The first
call of a point (where tf.function traces, torch.compile compiles, lazy weights materialise) is
never a sample: its time is kept apart, as ``first_call_ms``.
"""
import time
import timeit
from collections import namedtuple

import numpy as np

from .conditions import gc_paused

Measurement = namedtuple(
    "Measurement", "samples_ms mean_ms warmup_calls repeat number first_call_ms gc_collections "
                   "marked_ms planned_samples point_cost_s kept_steal_ms kept_other_cpu_ms"
)
# gc_collections: not counted (timeit's own); the rest: no sample judged, no sizing
Measurement.__new__.__defaults__ = (None, None, None, None, None, None)
Measurement.__doc__ = """Raw samples of one point (ms per call) and how they were taken.

``mean_ms`` is the method's own reported mean (for timeit computed exactly as the 2019 script did);
``first_call_ms`` the untimed first call, one-off costs included; ``marked_ms`` the samples left
out of the figure (conditions.SampleWatch); ``planned_samples`` and ``point_cost_s`` the sizing
(planned_samples).
"""

DuelSettings = namedtuple(
    "DuelSettings",
    "warmup_calls min_samples min_time_s max_samples max_time_s warmup_time_s noise_ratio"
)
# warmup_time_s 0: warm up by count alone; noise_ratio 0: min_samples and min_time_s alone
DuelSettings.__new__.__defaults__ = (0.0, 0.0)
DUEL_DEFAULTS = DuelSettings(
    warmup_calls=3, min_samples=5, min_time_s=0.0, max_samples=1000, max_time_s=60.0,
    warmup_time_s=0.5, noise_ratio=0.8,
)

TimeitSettings = namedtuple("TimeitSettings", "repeat number")
TIMEIT_DEFAULTS = TimeitSettings(repeat=30, number=3)


def _no_sync():
    return None


def time_timeit(call, settings=TIMEIT_DEFAULTS, clock=timeit.default_timer):
    """Time ``call`` exactly as the 2019 script did: one untimed call, then timeit.repeat.

    One sample per repeat: the per-call time of that repeat (its total over ``number`` calls).
    timeit switches the garbage collector off while timing, as it did in 2019. ``clock``:
    timeit's own (perf_counter); a test passes one it controls.
    """
    first_call_ms = _timed_ms(call, _no_sync, clock)
    totals = timeit.repeat(call, repeat=settings.repeat, number=settings.number, timer=clock)
    samples = [total / settings.number * 1000.0 for total in totals]
    mean_ms = sum(totals) / float(len(totals)) / float(settings.number) * 1000.0
    return Measurement(samples, mean_ms, 1, settings.repeat, settings.number, first_call_ms)


def _timed_ms(call, synchronise, clock):
    before = clock()
    call()
    synchronise()
    return (clock() - before) * 1000.0


def kalibera_jones(point_cost_s, call_s, noise_ratio):
    """Kalibera and Jones' repetitions at the lower of two levels (ISMM 2013), unbounded:
    ceil(sqrt(cost of a process-point / cost of a sample x variance of one sample / variance
    between processes)), both variances of the logs; None where a figure is missing."""
    if not (point_cost_s > 0 and call_s > 0 and noise_ratio > 0):
        return None
    return int(np.ceil(np.sqrt(point_cost_s / call_s * noise_ratio)))


def planned_samples(call_s, point_cost_s, noise_ratio, settings):
    """Samples per process-point by Kalibera and Jones' rule for repetitions at the lower of two
    levels (ISMM 2013): sqrt(cost of a process-point / cost of a sample x variance of one sample
    / variance between processes), both variances of the logs. A process costs far more than a
    sample and processes differ more than samples do, so a few samples per process and more
    processes narrow an interval over processes the most for the time. At least
    ``settings.min_samples`` (a median of five is robust to two outliers), at most
    ``max_samples``; ``noise_ratio`` 0: ``min_samples`` alone."""
    wanted = kalibera_jones(point_cost_s, call_s, noise_ratio)
    if wanted is None:
        return settings.min_samples
    return int(min(settings.max_samples, max(settings.min_samples, wanted)))


def time_duel(call, synchronise=_no_sync, settings=DUEL_DEFAULTS, clock=time.perf_counter,
              watch=None, overhead_s=0.0):
    """Time ``call`` one call per sample, with warm-up and a device barrier at every clock read.

    Stops once it has its planned samples (planned_samples, from the first sample's cost and
    this point's fixed cost: its first call, its warm-up and ``overhead_s``, the share of the
    process's start-up and the point's other untimed work) and has run ``min_time_s`` seconds,
    or at ``max_samples`` samples, or once ``max_time_s`` seconds have passed (then with fewer
    samples than planned if a single call is that slow; ``n_samples`` tells how many).
    ``watch`` (conditions.SampleWatch): each sample is judged by what else used its CPUs, and
    a marked one is kept apart (``marked_ms``) and replaced; without one every sample counts.
    A point that reaches a bound with fewer than ``min_samples`` clean samples counts them all.
    At least one warm-up call whatever ``warmup_calls`` says (the config refuses 0): the first
    call of a shape traces or compiles, and that is never a sample. After it, warm-up calls go on
    up to ``warmup_calls`` in all, or until those after the first have taken ``warmup_time_s``
    (when positive): one steady call of 700 ms warms up as well as three.
    """
    warmup_calls = max(1, settings.warmup_calls)  # the first call is never a sample
    synchronise()
    began = clock()
    first_call_ms = _timed_ms(call, synchronise, clock)
    done, warming = 1, clock()
    while done < warmup_calls:
        if settings.warmup_time_s > 0 and clock() - warming >= settings.warmup_time_s:
            break
        call()
        synchronise()
        done += 1
    point_cost_s = clock() - began + overhead_s
    samples, marked, wanted, every = [], [], None, []
    with gc_paused({}) as collector:
        started = clock()
        while True:
            if watch is not None:
                watch.start()
            before = clock()
            call()
            synchronise()
            after = clock()
            sample_ms = (after - before) * 1000.0
            every.append(sample_ms)
            if watch is not None and watch.stop(sample_ms) is not None:
                marked.append(sample_ms)
            else:
                samples.append(sample_ms)
            if wanted is None:
                wanted = planned_samples(sample_ms / 1000.0, point_cost_s + sample_ms / 1000.0,
                                         settings.noise_ratio, settings)
            elapsed = after - started
            enough = len(samples) >= wanted and elapsed >= settings.min_time_s
            if enough or len(samples) + len(marked) >= settings.max_samples or \
                    elapsed >= settings.max_time_s:
                break
    if marked and len(samples) < settings.min_samples:
        # too few clean samples within the bounds: the figure has them all, and the point is
        # judged on all of them (conditions.disturbance)
        samples, marked = every, []
        watch.keep_all()
    return Measurement(
        samples, float(np.mean(samples)), done, None, None, first_call_ms,
        collector.get("collections", 0), marked, wanted, point_cost_s,
        watch.kept_steal_ms if watch is not None else None,
        watch.kept_other_ms if watch is not None else None,
    )


def generation_split(first_token_ms, whole_ms, batch_size, new_tokens):
    """A generation point's figures from the median of its one-token calls (the prefill and
    first token) and of its whole calls of ``new_tokens`` tokens: (time to first token, time per
    output token after it, tokens per second). Each further token costs the whole call less the
    first-token call, shared over the ``new_tokens - 1`` tokens after the first; never a total
    divided by every token, which would hide the prefill in each token's time."""
    per_token = (whole_ms - first_token_ms) / (new_tokens - 1) if new_tokens > 1 else None
    return first_token_ms, per_token, batch_size * new_tokens / (whole_ms / 1000.0)


def generation_columns(first, whole, batch_size, new_tokens):
    """The generation columns of a point from the Measurement of its one-token calls
    (``first``) and of its whole calls (``whole``, the point's own samples)."""
    first_ms, per_token_ms, tokens_per_s = generation_split(
        float(np.median(first.samples_ms)), float(np.median(whole.samples_ms)), batch_size,
        new_tokens)
    return {
        "new_tokens": new_tokens,
        "first_token_samples": [float(value) for value in first.samples_ms],
        "first_token_first_call_ms": first.first_call_ms,
        "first_token_ms": first_ms,
        "per_token_ms": per_token_ms,
        "tokens_per_s": tokens_per_s,
    }


def summarise(measurement):
    """Statistics of a measurement's samples, as contract columns (milliseconds).

    ``std`` is the sample standard deviation (ddof=1; 0.0 for a single sample); ``p90`` is
    numpy's linear-interpolated 90th percentile.
    """
    samples = np.asarray(measurement.samples_ms, dtype=np.float64)
    return {
        "samples": [float(value) for value in samples],
        "n_samples": int(samples.size),
        "mean": float(measurement.mean_ms),
        "median": float(np.median(samples)),
        "std": float(np.std(samples, ddof=1)) if samples.size > 1 else 0.0,
        "min": float(samples.min()),
        "max": float(samples.max()),
        "p90": float(np.percentile(samples, 90)),
        "warmup_calls": measurement.warmup_calls,
        "repeat": measurement.repeat,
        "number": measurement.number,
        "first_call_ms": measurement.first_call_ms,
        "gc_collections": measurement.gc_collections,
        "marked_samples": measurement.marked_ms,
        "planned_samples": measurement.planned_samples,
        "point_cost_s": measurement.point_cost_s,
        "kept_steal_ms": measurement.kept_steal_ms,
        "kept_other_cpu_ms": measurement.kept_other_cpu_ms,
    }
