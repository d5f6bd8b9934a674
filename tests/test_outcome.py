"""The lines a run prints at its end (render/outcome.py)."""
import pandas as pd
import pytest

from duel.cell import contract
from duel.host.render import outcome

pytestmark = pytest.mark.unit


def test_the_end_of_run_lines_show_each_failure_message_in_one_line():
    rows = []
    for length, status, message in ((8, "ok", None), (16, "error", "ValueError: broke\nat x"),
                                    (32, "oom", " \n"), (64, "error", "")):
        row = contract.empty_row()
        row.update(model="m", framework="pytorch", mode="eager", batch_size=1, seq_len=length,
                   status=status, message=message)
        rows.append(row)
    head, *failures = outcome.lines(pd.DataFrame(rows))
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
