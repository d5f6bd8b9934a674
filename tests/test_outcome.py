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
