"""The lines a run prints at its end (render/outcome.py)."""
import os

import pandas as pd
import pytest

from duel.cell import contract
from duel.host.plan import layout
from duel.host.render import outcome
from duel.host.tables import summary

pytestmark = pytest.mark.unit


def test_the_end_of_run_lines_show_each_failure_message_in_one_line():
    rows = []
    for length, status, message in ((8, "ok", None), (16, "error", "ValueError: broke\nat x"),
                                    (32, "oom", " \n"), (64, "error", "")):
        row = contract.empty_row()
        row.update(model="m", framework="pytorch", mode="eager", batch_size=1, seq_len=length,
                   status=status, message=message)
        rows.append(row)
    head, *failures = outcome.lines(summary.migrated(pd.DataFrame(rows)))
    assert head.startswith("Duel: 4 points: 1 ok, 2 error, 1 oom. 3 of 4 points FAILED")
    assert failures == ["  m pytorch eager 1x16 (error, 1 point): ValueError: broke",
                        "  m pytorch eager 1x32 (oom, 1 point): (no message)",
                        "  m pytorch eager 1x64 (error, 1 point): (no message)"]


def test_a_strict_run_is_refused_for_failed_points_and_for_points_left_disturbed(tmp_path):
    from duel.host.tables import summary

    def merged(rows):
        frame = summary.migrated(pd.DataFrame(rows))
        summary.write_outputs(frame, str(tmp_path / "summary.parquet"),
                              str(tmp_path / "summary.csv"))

    rows = []
    for length, status, disturbed, counted in ((8, "ok", "other processes 40% of a CPU", False),
                                               (8, "ok", None, True),
                                               (16, "ok", "canary score 6.2", True),
                                               (32, "error", None, True)):
        row = contract.empty_row()
        row.update(model="m", framework="pytorch", mode="eager", batch_size=1, seq_len=length,
                   method="duel", status=status, disturbed=disturbed, counted=counted)
        rows.append(row)
    assert outcome.strict_refusal(str(tmp_path)) is None  # no table yet
    merged(rows)
    assert outcome.strict_refusal(str(tmp_path)) == (
        "strict: 1 failed points and 1 still disturbed points, so this run exits with status 1")
    merged(rows[:2])  # the disturbed row was measured again, and its last one counts
    assert outcome.strict_refusal(str(tmp_path)) is None


def test_a_cell_that_began_and_left_no_shard_is_named_with_where_it_ran(tmp_path, monkeypatch):
    from duel.cell import environment
    from duel.host.plan import layout

    monkeypatch.chdir(tmp_path)
    shards = [layout.SHARD_PATTERN.format(era="current", device="cpu", framework=framework,
                                          mode="eager", precision="fp32", task="inference",
                                          model="m", replicate=1)
              for framework in ("pytorch", "tensorflow", "jax")]
    said = {"pytorch": environment.RUNS_ON + "node n2 (SLURM job 7)\nstarted\n",
            "tensorflow": environment.RUNS_ON + "host h\n", "jax": "Traceback\n"}
    for shard, framework in zip(shards, ("pytorch", "tensorflow", "jax")):
        os.makedirs(os.path.dirname(layout.cell_log(shard)))
        with open(layout.cell_log(shard), "w") as handle:
            handle.write(said[framework])
    os.makedirs(os.path.dirname(shards[1]))
    open(shards[1], "w").close()  # finished
    assert outcome.unfinished_lines(shards) == [
        "Duel: cell current/cpu/pytorch/eager/fp32/inference/m/r1 did not finish: it ran on node "
        "n2 (SLURM job 7); its log: results/logs/cells/current/cpu/pytorch/eager/fp32/inference/"
        "m/r1.log"]


def write_statistics(results, intervals, stored_before_decisions=False):
    """results/statistics/ of one pair of modes whose points have these (ratio, low, high),
    judged as statistics.point_ratios judges; ``stored_before_decisions``: the files as a run
    wrote them before equivalent and undecided were told apart."""
    from duel.host.plan import layout
    from duel.host.verdicts import statistics
    rows = []
    for index, (ratio, low, high) in enumerate(intervals):
        found, text = statistics.decided(ratio, low, high, 0.05, "PyTorch faster",
                                         "TensorFlow faster")
        rows.append(dict(era="current", device="cpu", precision="fp32", task="inference",
                         method="duel", mode_pt="eager", mode_tf="function", model="m",
                         batch_size=1, seq_len=8 * (index + 1), replicates_pt=3,
                         replicates_tf=3, interval=statistics.BETWEEN, ratio=ratio, ci_low=low,
                         ci_high=high, min_effect=0.05, clear="yes" if found == "faster" else "no",
                         decision=found, verdict=text, disturbed=None))
    ratios = pd.DataFrame(rows)
    pairs = statistics.pair_summary(ratios)
    if stored_before_decisions:
        ratios = ratios.drop(columns="decision")
        pairs = pairs.drop(columns=["equivalent", "undecided", "decided"])
    folder = os.path.join(str(results), layout.STATISTICS)
    os.makedirs(folder)
    ratios.to_csv(os.path.join(folder, "ratios.csv"), index=False)
    pairs.to_csv(os.path.join(folder, "pairs.csv"), index=False)
    return str(results)


# The README's example: 16 points clearly PyTorch's, one equivalent, one undecided.
EIGHTEEN = [(0.8, 0.75, 0.85)] * 15 + [(0.5, 0.45, 0.55), (1.0, 0.98, 1.02), (1.0, 0.9, 1.1)]


@pytest.mark.parametrize("before", [False, True])
def test_the_verdict_lines_count_each_decision(tmp_path, before):
    lines = outcome.verdict_lines(write_statistics(tmp_path, EIGHTEEN, before))
    assert lines[:2] == ["Verdict (PyTorch time / TensorFlow time; < 1: PyTorch faster):",
                         "  PyTorch eager vs TensorFlow function (current cpu fp32 inference "
                         "duel):"]
    assert lines[2] == "    of 18 points: PyTorch faster 16, TensorFlow faster 0, " + (
        "not clear 2" if before else "equivalent 1, undecided 1")
    assert lines[3].startswith("    geometric-mean ratio 0.80, 3 processes per cell")
    assert lines[4:6] == ["  Largest clear differences:",
                          "    m 1x128, PyTorch eager vs TensorFlow function: 0.50 [0.45, 0.55]"]


def test_a_pair_with_no_point_run_on_both_sides_says_so_in_one_line(tmp_path):
    """An era that lacks a mode: the pair's points are all N/A, so it has no verdict, not a
    count of zeros and a ratio of n/a."""
    results = write_statistics(tmp_path, EIGHTEEN)
    path = os.path.join(results, layout.PAIRS)
    pairs = pd.read_csv(path)
    lacking = pairs.assign(mode_pt="compile", pytorch_clearly_faster=0,
                           tensorflow_clearly_faster=0, equivalent=0, undecided=0,
                           geomean_ratio=None, geomean_low=None, geomean_high=None)
    pd.concat([pairs, lacking]).to_csv(path, index=False)
    lines = outcome.verdict_lines(results)
    at = lines.index("  PyTorch compile vs TensorFlow function (current cpu fp32 inference duel):")
    assert lines[at + 1] == "    none of 18 points ran on both sides: no verdict"
    assert lines[at + 2] == "  Largest clear differences:"
