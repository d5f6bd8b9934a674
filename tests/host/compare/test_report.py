"""The files a comparison of two runs writes (host/compare/report.py), from synthetic runs with
a known answer: what the summary says, every file in place, and nothing left half written."""
import os

import pandas as pd
import pytest

from conftest import GRID, synthetic_rows
from duel.host.compare import changes, report

pytestmark = pytest.mark.unit


def compared(slow=None):
    """Base and new runs of three quiet processes a side; ``slow``: the new run's slowdowns."""
    base, new = (changes.read_run_frame(pd.DataFrame(synthetic_rows(
        seed=seed, between=0.005, slow=slow if seed == 2 else None))) for seed in (1, 2))
    return changes.compare(base, new)


def test_a_clear_slowdown_is_the_summarys_exit_line_and_its_changed_point():
    result = compared(slow={("pytorch", 2, 128): 1.5})
    assert result.exit_status == 1
    text = report.markdown(result)
    assert "Exit 1: 1 point(s) clearly slower by more than" in text
    changed = text.split("#### Points that changed\n\n", 1)[1].splitlines()
    assert len(changed) == 3 and "2x128" in changed[2] and "slower" in changed[2], changed


def test_two_runs_alike_say_exit_0_and_no_changed_point():
    result = compared()
    assert report.ci_status_line(result).startswith("Exit 0: no point clearly slower")
    assert report.markdown(result).endswith("#### Points that changed\n\nNone.\n")


def test_past_the_limit_the_summary_points_to_the_csv():
    slow = {("pytorch", batch, length): 1.5 for batch, length in GRID}
    text = report.markdown(compared(slow=slow), limit=2)
    assert text.endswith("... and %d more in comparison.csv.\n" % (len(GRID) - 2))


def test_every_file_is_written_at_once_and_nothing_is_left_beside_it(tmp_path):
    result = compared(slow={("pytorch", 2, 128): 1.5})
    folder = tmp_path / "out"
    report.write_outputs(result, str(folder))
    assert sorted(os.listdir(str(folder))) == sorted(report.FILES)
    assert os.listdir(str(tmp_path)) == ["out"]  # no staging folder left
    assert (folder / "comparison.md").read_text() == report.markdown(result)
    assert len(pd.read_csv(str(folder / "comparison.csv"))) == len(result.points)


def test_an_output_path_that_is_a_file_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "out").write_text("mine")
    with pytest.raises(changes.CompareError, match="exists and is not a folder"):
        report.write_outputs(compared(), str(tmp_path / "out"))
    assert os.listdir(str(tmp_path)) == ["out"] and (tmp_path / "out").read_text() == "mine"
