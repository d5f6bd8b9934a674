"""Report pages' and the published site's HTML pieces (render/pages.py)."""
import glob
import os
import re
import tomllib

import pandas as pd
import pytest

from conftest import REPO
from duel.host.render import pages

pytestmark = pytest.mark.unit


def test_page_tables_escape_their_text():
    table = pages.frame_table(pd.DataFrame({"model": ["<b>x</b>"], "ratio": [1 / 3.0]}))
    assert "&lt;b&gt;x&lt;/b&gt;" in table and "<b>" not in table and ">0.3333<" in table
    assert '<th class="text">model</th><th class="num">ratio</th>' in table  # by dtype


def test_missing_values_are_empty_and_an_object_column_of_numbers_stays_text():
    frame = pd.DataFrame({"threads": [2, None], "ratio": [float("nan"), pd.NA]}, dtype=object)
    assert [pages.text(value) for value in (None, float("nan"), pd.NA, pd.NaT)] == [""] * 4
    table = pages.frame_table(frame)
    assert '<td class="text">2</td><td class="text"></td>' in table
    assert "nan" not in table.lower() and "None" not in table and "NA" not in table


def test_a_table_of_cells_aligns_by_their_text_and_takes_classes_and_wrapping():
    table = pages.table(["run", "ratio", "note"], [["a1", "0.5", pages.link("x.html#r", "<i>")]],
                        [["", pages.verdict_class("pytorch"), ""]], wrap=("note",))
    assert '<th class="text">run</th><th class="num">ratio</th>' in table
    assert '<td class="num verdict pytorch">0.5</td>' in table
    assert '<td class="text wrap"><a href="x.html#r">&lt;i&gt;</a></td>' in table
    assert pages.verdict_class(None) == "verdict unclear"
    assert pages.verdict_class(None, "equivalent") == "verdict equivalent"
    assert pages.verdict_class(None, "undecided") == "verdict unclear"
    assert pages.verdict_class("tensorflow", "faster") == "verdict tensorflow"


def test_a_scope_page_of_the_site_counts_each_decision(tmp_path):
    from duel.host.store import site
    runs = pd.DataFrame([dict(run_id="r1", started_at="2026-12-01T10:00:00+00:00",
                              when="2026-12-01 10:00 UTC", machine="alpha", git_commit="abc",
                              noisy=False)])
    scope = ("current", "cpu", "fp32", "inference", "duel")
    verdicts = pd.DataFrame([dict(
        zip(("era", "device", "precision", "task", "method"), scope), run_id="r1",
        mode_pt="eager", mode_tf="function", replicates=3, interval="between processes",
        points=18, compared=18, pytorch_clearly_faster=16, tensorflow_clearly_faster=0,
        equivalent=1, undecided=1, decided=17, not_clear=2, disturbed=0, geomean_ratio=0.8,
        geomean_low=0.75, geomean_high=0.85)])
    written = site.scope_pages(str(tmp_path), runs, verdicts, [scope], "1 run judged")
    page = (tmp_path / written[scope]).read_text(encoding="utf-8")
    header = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    cells = re.findall(r"<td[^>]*>([^<]*)(?:<span[^>]*>[^<]*</span>)?[^<]*</td>", page)
    counted = dict(zip(header, cells))
    assert [counted[name] for name in ("PyTorch faster", "TensorFlow faster", "equivalent",
                                       "undecided", "compared")] == ["16", "0", "1", "1", "18"]
    assert '<td class="num verdict pytorch">0.8</td>' in page


def test_the_templates_escape_every_value_once():
    page = pages.render("site/page.html", title="a <b> & c", home="../index.html",
                        noisy_meaning="")
    assert "<title>a &lt;b&gt; &amp; c</title>" in page and "<h1>a &lt;b&gt; &amp; c</h1>" in page
    assert '<nav><a href="../index.html">All runs</a></nav>' in page
    assert str(pages.anchor("run-<1>", "<1>", ", noisy")) == \
        '<span id="run-&lt;1&gt;">&lt;1&gt;</span>, noisy'
    assert str(pages.lines([pages.link("a.html", "x&y"), "<b>"])) == \
        '<a href="a.html">x&amp;y</a><br>&lt;b&gt;'


def test_every_template_ships_with_the_package():
    """pyproject.toml's package-data, read as setuptools reads it (recursive globs), names every
    file under templates/."""
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as handle:
        patterns = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["duel.host.render"]
    render = os.path.dirname(pages.__file__)
    shipped = {name for pattern in patterns
               for name in glob.glob(pattern, root_dir=render, recursive=True)}
    found = {os.path.relpath(os.path.join(folder, name), render)
             for folder, _, names in os.walk(os.path.join(render, "templates")) for name in names}
    assert found and found <= shipped, sorted(found - shipped)
