"""The conditions a cell times under: bound CPUs, OpenMP placement, the collector, the canary."""
import gc
import os
import subprocess
import sys

import pytest


from duel.cell import conditions, timing

pytestmark = pytest.mark.unit


def test_cpus_are_written_in_cpuset_notation():
    assert conditions.describe_cpus([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert conditions.describe_cpus([3]) == "3" and conditions.describe_cpus([]) == ""
    assert conditions.pinned_cpus(2, available={4, 0, 9}) == [0, 4]


def test_a_cell_process_is_bound_and_says_so():
    """In a fresh process, as a cell is: its affinity and OpenMP placement are set and
    recorded."""
    code = ("import os, json; from duel.cell import conditions; "
            "c = conditions.bind_process(1); c['now'] = sorted(os.sched_getaffinity(0)); "
            "c['bind'] = os.environ['OMP_PROC_BIND']; print(json.dumps(c))")
    output = subprocess.check_output([sys.executable, "-c", code], env=dict(
        os.environ, OMP_PROC_BIND=""), text=True)
    import json
    columns = json.loads(output)
    first = min(os.sched_getaffinity(0))
    assert columns["now"] == [first] and columns["cpu_affinity"] == str(first)
    assert columns["gc_policy"] == conditions.GC_POLICY
    assert "OMP_PLACES=cores" in columns["omp_binding"]


def test_the_collector_is_off_while_timing_and_collections_are_counted():
    assert gc.isenabled()
    seen = []

    def call():
        seen.append(gc.isenabled())
        if len(seen) == 4:
            gc.collect()  # a framework collecting by itself: counted

    settings = timing.DuelSettings(1, 5, 0.0, 5, 10.0)
    measurement = timing.time_duel(call, settings=settings)
    assert seen[0] is True and not any(seen[1:])  # warm-up on, samples off
    assert measurement.gc_collections >= 1
    assert gc.isenabled()  # restored
    assert timing.summarise(measurement)["gc_collections"] == measurement.gc_collections


def test_the_collector_comes_back_when_a_call_fails():
    def call():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        with conditions.gc_paused({}):
            call()
    assert gc.isenabled()


def test_the_canary_times_a_fixed_product():
    assert 0 < conditions.canary_ms(size=64, runs=3) < 1000


def stat_file(tmp_path, name, per_cpu):
    """A /proc/stat as the kernel writes it: ``per_cpu`` (user, system, steal) ticks per CPU."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for cpu, (user, system, steal) in enumerate(per_cpu):
        lines.append("cpu%d %d 0 %d 1000 0 0 0 %d 0 0" % (cpu, user, system, steal))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\nintr 0\n")
    return str(path)


class RecordedWatch(conditions.SampleWatch):
    """SampleWatch reading a recorded /proc/stat before and after each sample, and a recorded
    process clock: the per-sample rule judged on readings, not on this machine's noise."""

    def __init__(self, limits, readings, own_ms):
        super().__init__(limits, cpus=[0, 1], path=None)
        self.tick_ms, self.margin_ms = 10.0, 20.0
        self.readings, self.own_ms = list(readings), list(own_ms)

    def start(self):
        self._ticks, self._own = conditions.cpu_ticks([0, 1], self.readings.pop(0)), 0.0

    def stop(self, wall_ms):
        self.path = self.readings.pop(0)
        own = self.own_ms.pop(0) / 1000.0
        ticks = conditions.cpu_ticks([0, 1], self.path)
        steal = (ticks[1] - self._ticks[1]) * self.tick_ms
        other = (ticks[0] - self._ticks[0]) * self.tick_ms - own * 1000.0
        reason = conditions.sample_mark(steal, other, wall_ms, self.threads, self.margin_ms,
                                        self.limits)
        if reason is None:
            self.kept_steal_ms += steal
            self._kept_other_ms += other
        return reason


def test_a_sample_is_marked_only_by_steal_it_surely_had(tmp_path):
    """Ticks are 10 ms a CPU: two CPUs' readings are off by less than 20 ms, so a 100 ms sample
    (200 ms of CPU time, 5%: 10 ms) is marked at 4 ticks of steal (40 - 20 > 10), not at 3."""
    before = stat_file(tmp_path, "a", [(100, 0, 0), (100, 0, 0)])
    three = stat_file(tmp_path, "b", [(110, 0, 2), (110, 0, 1)])
    four = stat_file(tmp_path, "c", [(110, 0, 2), (110, 0, 2)])
    assert conditions.sample_mark(30.0, 0.0, 100.0, 2, 20.0, conditions.LIMITS) is None
    assert conditions.sample_mark(40.0, 0.0, 100.0, 2, 20.0, conditions.LIMITS) == "steal"
    watch = RecordedWatch(conditions.LIMITS, [before, three, before, four], [200.0, 200.0])
    watch.start()
    assert watch.stop(100.0) is None
    watch.start()
    assert watch.stop(100.0) == "steal"
    assert watch.kept_steal_ms == 30.0  # the kept sample's steal counts toward the point's


def test_a_neighbour_marks_a_sample_and_a_short_sample_is_never_marked_by_a_tick(tmp_path):
    before = stat_file(tmp_path, "a", [(100, 0, 0), (100, 0, 0)])
    # 100 ms of wall: this process used 200 ms, the CPUs were busy 300 ms: a neighbour's 100 ms
    busy = stat_file(tmp_path, "b", [(120, 0, 0), (110, 0, 0)])
    # 2 ms of wall, one tick of steal and one of a neighbour: below what ticks can tell
    tick = stat_file(tmp_path, "c", [(101, 0, 1), (100, 0, 0)])
    watch = RecordedWatch(conditions.LIMITS, [before, busy, before, tick], [200.0, 4.0])
    watch.start()
    assert watch.stop(100.0) == "other"
    watch.start()
    assert watch.stop(2.0) is None
    assert watch.kept_other_ms == 6.0  # signed sums: one tick less the process's own 4 ms


def test_the_point_is_judged_by_its_kept_samples_and_measured_again_only_when_slow():
    limits = conditions.LIMITS
    row = {"status": "ok", "point_wall_s": 2.0, "threads": 2, "steal_ms": 400.0,
           "other_cpu_ms": 0.0, "samples": [100.0] * 10, "kept_steal_ms": 20.0,
           "kept_other_cpu_ms": 0.0, "canary_before_ms": 1.0, "canary_after_ms": 1.0}
    # 400 ms of steal in the point, 20 of it in the kept samples (1% of 2 x 1000 ms): not disturbed
    assert conditions.disturbance(row, [1.0] * 10)[0] is None
    # a neighbour's 60 ms in 1000 ms of kept samples: 6% of a CPU, but 4% surely (two ticks
    # less): not disturbed; 90 ms: 7% surely
    assert conditions.disturbance(dict(row, kept_other_cpu_ms=60.0), [1.0] * 10)[0] is None
    assert "other processes 7%" in conditions.disturbance(dict(row, kept_other_cpu_ms=90.0),
                                                          [1.0] * 10)[0]
    judged_whole = dict(row, kept_steal_ms=None)  # no sample judged: the point's own 10%
    assert "host steal 10%" in conditions.disturbance(judged_whole, [1.0] * 10)[0]
    steady = dict(row, kept_steal_ms=180.0, disturbed="host steal 8% of its CPU time",
                  canary_score=1.0)
    assert not conditions.slow_process(steady, limits)  # steady steal: again would not help
    assert conditions.slow_process(dict(steady, canary_score=5.0), limits)
    assert conditions.slow_process(dict(judged_whole, disturbed="host steal 10%"), limits)
