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
