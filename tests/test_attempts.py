"""Disturbed points: what counts as disturbed (conditions), what runs again and what counts
(attempts), what else used the CPUs (CpuWatch, on the real /proc/stat), and what the run says."""
import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from duel.cell import attempts, conditions, contract
from duel.host.tables import breakdown

pytestmark = pytest.mark.unit
LIMITS = conditions.Limits(max_steal_share=0.05, max_other_share=0.10, max_canary_ratio=1.5,
                           attempts=3)


def row(attempt=1, batch=1, steal=0.0, other=0.0, canary=(0.2, 0.2), status="ok"):
    values = contract.empty_row()
    values.update(batch_size=batch, seq_len=8, method="duel", status=status, attempt=attempt,
                  point_wall_s=1.0, threads=2, steal_ms=steal, other_cpu_ms=other,
                  canary_before_ms=canary[0], canary_after_ms=canary[1])
    return values


@pytest.mark.parametrize("values, reason", [
    (dict(), None),
    (dict(steal=99.0), None),  # 5% of 2 CPUs x 1 s is 100 ms
    (dict(steal=101.0), "host steal 5% of its CPU time"),
    (dict(other=201.0), "other processes 10% of its CPU time"),
    (dict(canary=(0.2, 0.32)), "canary 1.6x the job's fastest"),
    (dict(steal=300.0, canary=(0.5, 0.2)), "host steal 15% of its CPU time; canary 2.5x the job's fastest"),
    (dict(steal=900.0, status="error"), None),  # a failed point has no figure to disturb
])
def test_a_point_is_disturbed_beyond_a_stated_limit_and_says_why(values, reason):
    assert conditions.disturbance(row(**values), 0.2, LIMITS) == reason


def test_a_limit_of_zero_is_off():
    off = LIMITS._replace(max_steal_share=0, max_canary_ratio=0)
    assert conditions.disturbance(row(steal=900.0, canary=(9.0, 9.0)), 0.2, off) is None


def test_only_each_points_last_attempt_counts_and_a_disturbed_one_runs_again():
    rows = [row(1, batch=1, steal=500.0), row(1, batch=2)]
    assert attempts.judge(rows, LIMITS) == {(1, 8, "duel")}
    assert [r["counted"] for r in rows] == [True, True] and rows[0]["disturbed"]
    rows.append(row(2, batch=1, steal=500.0))
    assert attempts.judge(rows, LIMITS) == {(1, 8, "duel")}
    assert [r["counted"] for r in rows] == [False, True, True]
    rows.append(row(3, batch=1, steal=500.0))  # the last process allowed: no more attempts
    assert attempts.judge(rows, LIMITS) == set()
    assert [r["counted"] for r in rows] == [False, True, False, True]
    assert rows[3]["disturbed"].startswith("host steal")


def test_the_canary_is_judged_against_the_fastest_of_the_whole_job():
    rows = [row(1, canary=(0.4, 0.4)), row(1, batch=2, canary=(0.4, 0.4))]
    assert attempts.judge(rows, LIMITS) == set()  # a process slow throughout: nothing to compare
    rows.append(row(2, batch=3, canary=(0.2, 0.2)))
    assert attempts.judge(rows, LIMITS) == {(1, 8, "duel"), (2, 8, "duel")}


def busy(seconds):
    return subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + %r\n"
                             "while time.time() < end: pass" % seconds])


def test_the_watch_sees_another_process_on_its_cpus_and_not_its_own_work():
    cpu = sorted(os.sched_getaffinity(0))[0]
    watch = conditions.CpuWatch([cpu]).start()
    end = time.time() + 0.5
    while time.time() < end:  # this process's own work is not another's
        pass
    own = watch.stop()
    assert own["other_cpu_ms"] < 150 and own["steal_ms"] >= 0
    neighbour = busy(0.6)
    os.sched_setaffinity(neighbour.pid, [cpu])
    watch = conditions.CpuWatch([cpu]).start()
    time.sleep(0.5)
    seen = watch.stop()
    neighbour.wait()
    assert seen["other_cpu_ms"] > 300


def test_the_run_says_what_ran_again_and_warns_when_points_stayed_disturbed():
    rows = [row(1, batch=1, steal=500.0), row(1, batch=2), row(2, batch=1, steal=500.0),
            row(3, batch=1, steal=500.0)]
    attempts.judge(rows, LIMITS)
    frame = pd.DataFrame(rows)
    again, warning = breakdown.attempt_lines(frame)
    assert again.startswith("Disturbed: 1 of 2 points ran again in a fresh process (2 rows")
    assert warning.startswith("WARNING, unstable: 1 of 2 points were still disturbed after "
                              "their last attempt (steal 1)")
    calm = pd.DataFrame([row(1), row(1, batch=2)])
    calm["counted"], calm["disturbed"] = True, None
    assert breakdown.attempt_lines(calm) == []  # nothing to say


def test_the_breakdown_adds_up_a_runs_own_records():
    first = row(1)
    first.update(samples=[100.0] * 10, first_call_ms=500.0, point_wall_s=2.5, startup_s=4.0,
                 job_wall_s=20.0, model="m", framework="pytorch")
    timeit = row(1, batch=2)
    timeit.update(method="timeit", samples=[10.0] * 30, number=3, first_call_ms=100.0,
                  point_wall_s=1.5, startup_s=4.0, job_wall_s=20.0, model="m",
                  framework="pytorch")
    again = row(2)
    again.update(samples=[100.0] * 10, first_call_ms=500.0, point_wall_s=2.0, startup_s=3.0,
                 job_wall_s=20.0, model="m", framework="pytorch")
    frame = pd.DataFrame([first, timeit, again])
    table = breakdown.parts(frame, references_s=5.0, run_s=40.0)
    seconds = dict(zip(table["part"], table["seconds"]))
    assert seconds["timed samples"] == pytest.approx(1.0 + 0.9 + 1.0)
    assert seconds["first calls"] == pytest.approx(1.1)
    assert seconds["inside points, untimed"] == pytest.approx(6.0 - 2.9 - 1.1)
    assert seconds["cell start-up"] == pytest.approx(7.0)  # two processes, one job
    assert seconds["cells, between points"] == pytest.approx(20.0 - 7.0 - 6.0)
    assert seconds["reference jobs"] == 5.0
    assert seconds["the rest (Snakemake, merge, statistics, charts)"] == pytest.approx(15.0)
    assert breakdown.reported_share(table) == pytest.approx(4.0 / 40.0)
    text = breakdown.lines(table, 40.0)
    assert text[0] == ("Time: 40 s, 10% of it producing reported figures (timed samples, "
                       "first calls):")
    assert all(len(line) <= 80 for line in text[1:]) and len(text) == 8
