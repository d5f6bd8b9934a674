"""Disturbed points: what counts as disturbed (conditions), on recorded canary series and on
constructed rows; what is measured again and what counts (attempts), the run's budget of fresh
processes, what else used the CPUs (CpuWatch, on the real /proc/stat), and what the run says."""
import json
import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import REPO
from duel.cell import attempts, conditions, contract
from duel.host.plan import config_keys
from duel.host.tables import breakdown, summary

pytestmark = pytest.mark.unit
LIMITS = conditions.Limits(max_steal_share=0.05, max_other_share=0.10, max_canary_score=3.5,
                           calibrate=True, remeasures=2, attempts=3)
CANARIES = os.path.join(REPO, "tests", "data", "canary")
QUIET = [0.2, 0.21, 0.19, 0.2, 0.22, 0.18, 0.2, 0.21, 0.19, 0.2]  # a spread of about 5%


def row(attempt=1, batch=1, steal=0.0, other=0.0, canary=(0.2, 0.2), status="ok", remeasure=0,
        mode="eager"):
    values = contract.empty_row()
    values.update(batch_size=batch, seq_len=8, method="duel", mode=mode, status=status,
                  attempt=attempt,
                  remeasure=remeasure, point_wall_s=1.0, threads=2, steal_ms=steal,
                  other_cpu_ms=other, canary_before_ms=canary[0], canary_after_ms=canary[1])
    return values


@pytest.mark.parametrize("values, reason", [
    (dict(), None),
    (dict(steal=99.0), None),  # 5% of 2 CPUs x 1 s is 100 ms
    (dict(steal=101.0), "host steal 5% of its CPU time"),
    (dict(other=99.0), None),  # 10% of one CPU x 1 s is 100 ms
    (dict(other=101.0), "other processes 10% of a CPU"),
    (dict(canary=(0.2, 0.24)), None),  # 20% slower, but within 3.5 spreads of 5%
    (dict(canary=(0.2, 0.3)), None),  # one canary alone: a blip, not the point's whole time
    (dict(canary=(0.3, 0.3)), "canary score 5.6"),
    (dict(steal=300.0, canary=(0.5, 0.45)), "host steal 15% of its CPU time; canary score 11.2"),
    (dict(steal=900.0, status="error"), None),  # a failed point has no figure to disturb
])
def test_a_point_is_disturbed_beyond_a_stated_limit_and_says_why(values, reason):
    assert conditions.disturbance(row(**values), QUIET, LIMITS)[0] == reason


def test_the_canary_is_scored_against_its_own_spread_not_against_its_fastest_reading():
    noisy = [0.2 * (1 + 0.1 * (i % 5 - 2)) for i in range(20)]  # +-20%: a noisy host
    tight = [0.2 * (1 + 0.002 * (i % 5 - 2)) for i in range(20)]  # +-0.4%
    # 25% over the median: an outlier where the canary hardly varies, not where it varies a lot
    assert conditions.canary_score(0.25, noisy) < LIMITS.max_canary_score
    assert conditions.canary_score(0.25, tight) > LIMITS.max_canary_score
    # a spread below the floor does not turn a clock tick into an outlier
    assert conditions.canary_score(0.2 * 1.01, tight) < LIMITS.max_canary_score
    assert conditions.canary_score(0.3, noisy[:conditions.MIN_READINGS - 1]) is None


def test_a_limit_of_zero_is_off():
    off = LIMITS._replace(max_steal_share=0, max_canary_score=0)
    assert conditions.disturbance(row(steal=900.0, canary=(9.0, 9.0)), QUIET, off)[0] is None


def replay(process, limits=LIMITS):
    """A recorded measuring process (its calibration, and each point's canaries, steal and
    other processes' time) through the judge; (the reasons, the rows)."""
    judge = conditions.Judge(limits)
    judge.calibration = list(process["calibration"]) if limits.calibrate else []
    judge.readings = list(judge.calibration)
    rows = []
    for point in process["points"]:
        values = row(canary=(point["canary_before_ms"], point["canary_after_ms"]))
        values.update(point)
        rows.append(values)
    return [judge(values) for values in rows], rows


def recorded(name):
    """Processes recorded by benchmarks/detector.py on a 2-CPU AMD EPYC VM."""
    with open(os.path.join(CANARIES, name)) as handle:
        return json.load(handle)["processes"]


def test_recorded_quiet_processes_are_judged_and_the_rows_say_how():
    """How many quiet points the rule flags is a figure of benchmarks/detector.py (its false
    alarms, per machine), not a test's."""
    processes = recorded("quiet.json")
    reasons = [reason for process in processes for reason in replay(process)[0]]
    assert len(reasons) >= 40
    _, rows = replay(processes[0])
    assert rows[0]["disturbance_rule"] == conditions.RULE == "canary-score"
    assert rows[0]["canary_calibration_ms"] == processes[0]["calibration"]
    assert rows[-1]["canary_center_ms"] > 0 and rows[-1]["canary_spread"] >= 0


def test_recorded_processes_beside_a_busy_neighbour_are_flagged():
    for process in recorded("neighbour.json"):  # a neighbour busy all the time on one CPU
        reasons, _ = replay(process)
        assert all(reason and "other processes" in reason for reason in reasons), reasons


def test_without_calibration_the_first_points_have_no_canary_score():
    process = recorded("quiet.json")[0]
    reasons, rows = replay(process, LIMITS._replace(calibrate=False))
    assert rows[0]["canary_score"] is None and rows[0]["canary_calibration_ms"] == []
    assert rows[-1]["canary_score"] is not None  # the points before it are its readings


def test_only_each_points_last_row_counts_and_a_disturbed_one_may_run_again():
    rows = [row(1, batch=1), row(1, batch=1, remeasure=1), row(1, batch=2)]
    rows[0]["disturbed"] = rows[1]["disturbed"] = "host steal 25% of its CPU time"
    assert attempts.judge(rows, LIMITS) == {(1, 8, "duel", "eager")}
    assert [r["counted"] for r in rows] == [False, True, True]
    rows.append(row(2, batch=1))
    assert attempts.judge(rows, LIMITS) == set()  # measured quietly in the fresh process
    assert [r["counted"] for r in rows] == [False, False, True, True]
    last = row(3, batch=1)
    last["disturbed"] = "other processes 50% of a CPU"
    rows.append(last)  # the last process allowed: no more
    assert attempts.judge(rows, LIMITS) == set()
    assert [r["counted"] for r in rows] == [False, False, True, False, True]


def test_the_modes_of_one_process_are_points_of_their_own():
    rows = [row(1, mode="eager"), row(1, mode="function"), row(1, mode="eager", remeasure=1)]
    rows[2]["disturbed"] = "host steal 25% of its CPU time"
    assert attempts.judge(rows, LIMITS) == {(1, 8, "duel", "eager")}
    assert [r["counted"] for r in rows] == [False, True, True]


def test_fresh_processes_come_from_the_runs_budget(tmp_path):
    folder = str(tmp_path / "retries")
    attempts.write_budget(folder, 2)
    assert [attempts.take_fresh_process(folder) for _ in range(3)] == [True, True, False]
    attempts.write_budget(folder, 1)  # a new run: the tokens taken before are returned
    assert attempts.take_fresh_process(folder) and not attempts.take_fresh_process(folder)
    attempts.write_budget(folder, 0)
    assert not attempts.take_fresh_process(folder)
    assert attempts.take_fresh_process(None)  # a cell run by hand has no budget


def busy(seconds):
    return subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + %r\n"
                             "while time.time() < end: pass" % seconds])


@pytest.mark.alone
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


def judged_frame():
    """Two points: one quiet, one disturbed in its process and in a fresh one, still disturbed."""
    rows = [row(1, batch=1, steal=500.0), row(1, batch=1, steal=500.0, remeasure=1),
            row(1, batch=2), row(2, batch=1, steal=500.0)]
    for values in rows:
        values["disturbed"] = "host steal 25% of its CPU time" if values["steal_ms"] else None
        values["canary_spread"] = 0.03
        values["disturbance_rule"] = conditions.RULE  # as the judge marks every row
    attempts.judge(rows, LIMITS)
    return pd.DataFrame(rows)


def test_the_run_says_what_was_measured_again_and_that_its_host_was_noisy():
    again, noisy = breakdown.attempt_lines(judged_frame())
    assert again == ("Disturbed: 0 of 2 points measured again in their process, 1 in a fresh "
                     "process (2 disturbed rows kept, not counted).")
    assert noisy.startswith("Noisy host: 1 of 2 points (50%) were still disturbed after their "
                            "last measurement (steal 1); host steal 12.5% of the cells' CPU "
                            "time, canary spread 3.0%.")  # over the rows that count
    assert "verdicts resting on them are weaker" in noisy
    assert breakdown.disturbance(judged_frame()) == (2, 1, pytest.approx(0.125), True)
    calm = pd.DataFrame([row(1), row(1, batch=2)])
    calm["counted"], calm["disturbed"] = True, None
    assert breakdown.attempt_lines(calm) == []  # nothing to say
    assert breakdown.disturbance(calm).noisy is None  # never judged: unknown, not quiet
    calm["disturbance_rule"] = conditions.RULE
    assert breakdown.disturbance(calm) == (2, 0, 0.0, False)


def test_rows_judged_by_the_old_rule_say_so_and_rows_never_judged_say_nothing():
    old = pd.DataFrame([dict(row(1), disturbed="canary 1.6x the job's fastest", counted=True)])
    old = old.drop(columns=["disturbance_rule", "remeasure"])
    read = summary.migrated(old)
    assert read["disturbance_rule"].tolist() == ["canary-ratio"]
    assert read["remeasure"].tolist() == [0]
    never = summary.migrated(pd.DataFrame([{"batch_size": 1, "status": "ok"}]))
    assert never["disturbance_rule"].isna().all()


def test_the_old_canary_limit_is_refused_with_what_replaced_it():
    with pytest.raises(config_keys.PlanError, match="replaced by disturbance.max_canary_score"):
        config_keys.prepare_config({"disturbance": {"max_canary_ratio": 1.5}})
    config = config_keys.prepare_config({"disturbance": {"calibrate": "false", "remeasures": "1"}})
    assert config["disturbance"] == {"calibrate": False, "remeasures": 1}


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
