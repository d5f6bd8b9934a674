"""The timing core: accuracy against a known workload, the 2019 arithmetic, the stop rules."""
import time

import numpy as np
import pytest

from duel.cell import timing

pytestmark = pytest.mark.unit


def busy_wait(milliseconds):
    """A call that takes ``milliseconds`` of wall time (busy loop: no scheduler sleep jitter)."""
    def call():
        end = time.perf_counter() + milliseconds / 1000.0
        while time.perf_counter() < end:
            pass
    return call


def timed_run(run):
    """``run()``'s result and the wall time it took in ms, on the harness's own clock."""
    before = time.perf_counter()
    result = run()
    return result, (time.perf_counter() - before) * 1000.0


def assert_inside_the_run(measurement, wall_ms, calls_per_sample=1):
    """The first call and the samples are disjoint slices of the run, so together they fit in
    its wall time: an upper bound that grows with any disturbance, so it cannot flake, yet fails
    on a wrong unit or a sample that is a total."""
    timed_ms = measurement.first_call_ms + calls_per_sample * sum(measurement.samples_ms)
    assert 0.0 <= measurement.first_call_ms and timed_ms <= wall_ms


class Counter(object):
    def __init__(self, inner=None):
        self.calls = 0
        self.inner = inner

    def __call__(self):
        self.calls += 1
        if self.inner:
            self.inner()


def test_duel_measures_a_known_duration():
    settings = timing.DuelSettings(warmup_calls=2, min_samples=20, min_time_s=0.0,
                                   max_samples=20, max_time_s=10.0)
    measurement, wall_ms = timed_run(lambda: timing.time_duel(busy_wait(5.0), settings=settings))
    stats = timing.summarise(measurement)
    assert stats["n_samples"] == 20
    # The least disturbed sample bounds what the harness adds; the median holds the same bound
    # on a quiet machine but grows with other processes' time slices on a shared one.
    assert 5.0 <= stats["min"] < 5.5
    assert_inside_the_run(measurement, wall_ms)
    # so the half of the samples at or above the median fits in the run as well
    assert stats["median"] <= wall_ms / (stats["n_samples"] / 2.0)


def test_timeit_measures_a_known_duration_and_reports_the_2019_mean():
    settings = timing.TimeitSettings(repeat=10, number=3)
    counter = Counter(busy_wait(2.0))
    measurement, wall_ms = timed_run(lambda: timing.time_timeit(counter, settings))
    assert counter.calls == 1 + 10 * 3  # one untimed call, then repeat x number
    assert len(measurement.samples_ms) == 10
    assert 2.0 <= min(measurement.samples_ms) < 2.3  # as above
    assert_inside_the_run(measurement, wall_ms, calls_per_sample=3)
    assert 2.0 <= measurement.mean_ms <= wall_ms / (10 * 3)  # all 30 timed calls fit in the run
    # The 2019 figure: sum of the repeats' totals / repeat / number, i.e. the samples' mean.
    assert measurement.mean_ms == pytest.approx(np.mean(measurement.samples_ms), rel=1e-12)
    assert (measurement.warmup_calls, measurement.repeat, measurement.number) == (1, 10, 3)


def test_duel_warms_up_then_synchronises_at_every_clock_read():
    events = []
    call = lambda: events.append("call")
    sync = lambda: events.append("sync")
    settings = timing.DuelSettings(warmup_calls=2, min_samples=3, min_time_s=0.0,
                                   max_samples=3, max_time_s=10.0)
    measurement, wall_ms = timed_run(lambda: timing.time_duel(call, sync, settings))
    # a barrier, the first call timed apart (with its barrier), the rest of the warm-up, samples
    assert events == ["sync", "call", "sync", "call", "sync"] + ["call", "sync"] * 3
    assert len(measurement.samples_ms) == 3
    assert_inside_the_run(measurement, wall_ms)


def test_the_first_call_is_kept_apart_from_the_samples():
    """On a clock that the first call (a trace, a compile) moves by 2**-5 s and every later one
    by 2**-10 s: the first call's time, and only it, is first_call_ms; every sample is a later
    call's, exactly."""
    now, calls = [0.0], []

    def call():
        now[0] += 2.0 ** (-5 if not calls else -10)
        calls.append(1)

    clock = lambda: now[0]
    duel = timing.time_duel(call, settings=timing.DuelSettings(2, 5, 0.0, 5, 10.0), clock=clock)
    assert duel.first_call_ms == 1000.0 * 2.0 ** -5 and len(calls) == 2 + 5
    assert duel.samples_ms == [1000.0 * 2.0 ** -10] * 5
    calls[:] = []
    timed = timing.time_timeit(call, timing.TimeitSettings(repeat=3, number=2), clock=clock)
    assert timed.first_call_ms == 1000.0 * 2.0 ** -5 and len(calls) == 1 + 3 * 2
    assert timed.samples_ms == [1000.0 * 2.0 ** -10] * 3


def test_the_first_call_stays_out_of_the_samples_even_without_warm_up():
    calls = []

    def call():  # 20 ms the first time (a trace, a compile), 1 ms after
        busy_wait(20.0 if not calls else 1.0)()
        calls.append(1)

    duel = timing.time_duel(call, settings=timing.DuelSettings(0, 5, 0.0, 5, 10.0))
    # the median, not the maximum: one 1 ms call can be preempted on a busy machine
    assert duel.first_call_ms >= 20.0 and np.median(duel.samples_ms) < 5.0
    assert duel.warmup_calls == 1 and len(calls) == 1 + 5


def test_duel_runs_at_least_min_time():
    """On a clock that each call moves by exactly 1/1024 s: sampling stops at the first sample
    at which min_time_s (100 such calls) has passed, not one sooner and not one later."""
    now = [0.0]

    def call():
        now[0] += 2.0 ** -10

    settings = timing.DuelSettings(0, 2, 100 * 2.0 ** -10, 10000, 10.0)
    measurement = timing.time_duel(call, settings=settings, clock=lambda: now[0])
    assert len(measurement.samples_ms) == 100
    assert set(measurement.samples_ms) == {1000.0 * 2.0 ** -10}


def test_duel_stops_at_max_samples_and_at_max_time():
    fast = timing.time_duel(lambda: None, settings=timing.DuelSettings(0, 1, 60.0, 7, 60.0))
    assert len(fast.samples_ms) == 7
    slow = timing.time_duel(busy_wait(30.0), settings=timing.DuelSettings(0, 100, 0.0, 100, 0.1))
    assert 3 <= len(slow.samples_ms) <= 5


def test_summarise_matches_numpy_on_known_samples():
    samples = [4.0, 1.0, 3.0, 2.0, 10.0]
    stats = timing.summarise(timing.Measurement(samples, 4.0, 3, None, None, 9.0))
    assert stats["samples"] == samples  # kept raw, in order
    assert stats["median"] == 3.0
    assert stats["min"] == 1.0 and stats["max"] == 10.0
    assert stats["std"] == pytest.approx(np.std(samples, ddof=1))
    assert stats["p90"] == pytest.approx(7.6)  # linear interpolation between 4.0 and 10.0
    assert stats["mean"] == 4.0 and stats["first_call_ms"] == 9.0
    single = timing.summarise(timing.Measurement([2.5], 2.5, 0, None, None, None))
    assert single["std"] == 0.0 and single["n_samples"] == 1


SIZED = timing.DuelSettings(warmup_calls=1, min_samples=5, min_time_s=0.0, max_samples=1000,
                            max_time_s=60.0, noise_ratio=0.8)


def test_a_dear_call_gets_the_floor_and_a_cheap_one_more_samples():
    """Kalibera and Jones: samples grow as the square root of the fixed cost over a call's."""
    assert timing.planned_samples(0.25, 2.6, 0.8, SIZED) == 5  # sqrt(8.3) = 2.9: the floor
    assert timing.planned_samples(0.005, 2.6, 0.8, SIZED) == 21  # sqrt(416) = 20.4
    assert timing.planned_samples(0.005, 10.4, 0.8, SIZED) == 41  # four times the cost: twice
    # processes that differ more than samples (a smaller ratio) want fewer samples each
    assert timing.planned_samples(0.005, 2.6, 0.2, SIZED) == 11
    assert timing.planned_samples(0.005, 2.6, 0.0, SIZED) == 5  # sizing off: the floor alone
    assert timing.planned_samples(1e-7, 1e3, 0.8, SIZED) == 1000  # never past max_samples


def test_duel_takes_its_planned_samples_from_the_point_s_fixed_cost():
    settings = SIZED._replace(warmup_calls=1)
    measurement = timing.time_duel(busy_wait(2.0), settings=settings, overhead_s=0.5)
    # fixed cost about 0.5 s + a first call; a call of 2 ms: sqrt(0.5 / 0.002 x 0.8) = 14.1
    assert 15 <= measurement.planned_samples <= 16
    assert len(measurement.samples_ms) == measurement.planned_samples
    assert 0.5 <= measurement.point_cost_s < 0.6


class MarksEvery(object):
    """A stand-in for conditions.SampleWatch that marks every ``nth`` sample."""

    def __init__(self, nth):
        self.nth, self.seen, self.kept_steal_ms, self.kept_other_ms = nth, 0, 0.0, 0.0

    def start(self):
        pass

    def stop(self, wall_ms):
        self.seen += 1
        return "steal" if self.seen % self.nth == 0 else None

    def keep_all(self):
        self.kept_all = True


def test_a_marked_sample_is_kept_apart_and_replaced():
    settings = SIZED._replace(noise_ratio=0.0, min_samples=6)
    measurement = timing.time_duel(busy_wait(1.0), settings=settings, watch=MarksEvery(3))
    assert len(measurement.samples_ms) == 6  # the clean ones the point needs...
    assert len(measurement.marked_ms) == 2  # ...and the two marked on the way, kept apart
    stats = timing.summarise(measurement)
    assert stats["n_samples"] == 6 and len(stats["marked_samples"]) == 2
    assert stats["kept_steal_ms"] == 0.0


def test_max_samples_counts_marked_samples_too():
    settings = SIZED._replace(noise_ratio=0.0, min_samples=50, max_samples=10)
    measurement = timing.time_duel(busy_wait(0.2), settings=settings, watch=MarksEvery(2))
    assert len(measurement.samples_ms) + len(measurement.marked_ms) == 10


def test_a_point_short_of_clean_samples_at_its_bound_counts_them_all():
    """Two clean samples of every three at most 6 samples: fewer than the 5 it needs, so its
    figure has all 6, and it is judged on all of them (its watch keeps all)."""
    settings = SIZED._replace(noise_ratio=0.0, min_samples=5, max_samples=6)
    watch = MarksEvery(3)
    measurement = timing.time_duel(busy_wait(0.2), settings=settings, watch=watch)
    assert len(measurement.samples_ms) == 6 and measurement.marked_ms == []
    assert watch.kept_all


def test_every_sample_marked_still_gives_a_figure():
    settings = SIZED._replace(noise_ratio=0.0, max_samples=4)
    measurement = timing.time_duel(busy_wait(0.2), settings=settings, watch=MarksEvery(1))
    assert len(measurement.samples_ms) == 4 and measurement.marked_ms == []
