"""Report pages' HTML tables (render/pages.py)."""
import pandas as pd
import pytest

from duel.host.render import pages

pytestmark = pytest.mark.unit


def test_page_tables_escape_their_text():
    table = pages.table(pd.DataFrame({"model": ["<b>x</b>"], "ratio": [1 / 3.0]}), "t")
    assert "&lt;b&gt;x&lt;/b&gt;" in table and "<b>" not in table and ">0.3333<" in table
    assert '#T_t th.col0 {\n  text-align: left;' in table  # text heading left, number right
