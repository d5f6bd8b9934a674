"""What "clear" means is said in one sentence (statistics.CLEAR_MEANING), and every place that
explains it to a reader says that sentence: the report's captions, the spreadsheet's notes, the
statistics page's method text and the README. The wording "the interval excludes 1" is wrong
for the rule the judge applies, and fails here wherever it appears."""
import glob
import os
import re

import pytest
from openpyxl import Workbook

from conftest import REPO
from duel.host.render import spreadsheet
from duel.host.verdicts import statistics

pytestmark = pytest.mark.unit

# The captions that explain clear (report/comparison*.rst speak of the runs' comparison, whose
# band also widens with the machine's own change: compare/changes.py).
CAPTIONS = ["report/workflow.rst", "report/statistics.rst", "report/ratios.rst",
            "report/plots/ratio.rst", "report/plots/generation.rst"]
OLD_WORDING = re.compile(r"\bexclud\w* 1\b", flags=re.I)


def flat(text):
    """Text with its line breaks and runs of spaces as single spaces (captions wrap)."""
    return " ".join(text.split())


def read(path):
    with open(os.path.join(REPO, path)) as handle:
        return handle.read()


def says_clear_rightly(text):
    """Whether a text quotes the sentence and never the old wording."""
    return statistics.CLEAR_MEANING in flat(text) and not OLD_WORDING.search(flat(text))


def test_the_sentence_says_what_the_judge_does():
    sentence = statistics.CLEAR_MEANING
    assert "%d%%" % round(statistics.CONFIDENCE * 100) in sentence
    assert "1 + min_effect" in sentence and "1 / (1 + min_effect)" in sentence
    assert statistics.is_clear(1.06, 1.3, 1.1, 0.05)
    assert not statistics.is_clear(1.01, 1.3, 1.1, 0.05)  # excludes 1, reaches into the band
    assert statistics.is_clear(0.5, 1 / 1.06, 0.8, 0.05)
    assert not statistics.is_clear(0.5, 1 / 1.04, 0.8, 0.05)


@pytest.mark.parametrize("path", CAPTIONS + ["README.md"])
def test_captions_and_the_readme_quote_the_sentence(path):
    assert says_clear_rightly(read(path)), path


def test_the_spreadsheet_and_the_statistics_page_quote_the_sentence():
    workbook = Workbook()
    spreadsheet.write_about(workbook.active, [])
    notes = " ".join(str(cell.value) for row in workbook.active.iter_rows() for cell in row
                     if cell.value is not None)
    assert says_clear_rightly(notes)
    assert says_clear_rightly(statistics.method_text(0.05))


def test_no_caption_note_or_readme_says_the_interval_excludes_1():
    paths = (glob.glob(os.path.join(REPO, "report", "**", "*.rst"), recursive=True)
             + glob.glob(os.path.join(REPO, "scripts", "duel", "host", "render", "*.py"))
             + [os.path.join(REPO, "README.md")])
    assert [path for path in paths if OLD_WORDING.search(flat(read(path)))] == []


def test_the_check_fails_on_the_old_wording():
    old = "**Bold**: the 95% bootstrap interval excludes 1 (a clear difference)"
    assert not says_clear_rightly(old)
    assert not says_clear_rightly(statistics.CLEAR_MEANING + " Clear: the interval excludes 1.")
    assert says_clear_rightly("Bold: clear. " + statistics.CLEAR_MEANING.replace(" 1 +", "\n1 +"))


def test_the_site_colours_a_runs_ratio_only_where_the_judge_finds_it_clear():
    import pandas as pd
    from duel.host.store import site
    row = lambda ratio, low, high: pd.Series(dict(geomean_ratio=ratio, geomean_low=low,
                                                  geomean_high=high))
    assert site.ratio_class(row(0.9, 0.85, 0.93)) == "verdict pytorch"
    assert site.ratio_class(row(1.2, 1.1, 1.3)) == "verdict tensorflow"
    assert site.ratio_class(row(0.9, 0.8, 1.02)) == ""  # below 1, but not clear
    assert site.ratio_class(row(0.97, 0.96, 0.98)) == ""  # clear of 1, not of min_effect
    assert site.ratio_class(row(0.5, None, None)) == ""  # one process: no interval
