"""Every test says what it costs (pytest.ini's markers): a test without a cost marker, or marked
unit and something costlier, stops the run at collection and is named (tests/conftest.py)."""
import os
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit

NEW_TESTS = '''import pytest


def test_plain():
    pass


@pytest.mark.unit
@pytest.mark.workflow
def test_mixed():
    pass


@pytest.mark.unit
def test_fine():
    pass
'''


def collect(folder, *args):
    """pytest with the project's pytest.ini and tests/conftest.py on ``folder``'s tests."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", os.path.join(REPO, "pytest.ini"), "--rootdir",
         str(folder), "-p", "conftest", "-p", "no:cacheprovider", "--collect-only", "-q"]
        + list(args) + [str(folder)], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests")))


def test_a_test_without_a_cost_marker_stops_the_run_and_is_named(tmp_path):
    (tmp_path / "test_new.py").write_text(NEW_TESTS)
    for selection in ([], ["-m", "unit"]):  # the quick subset too: nothing slips through
        result = collect(tmp_path, *selection)
        output = result.stdout + result.stderr
        assert result.returncode == 4, output  # pytest's usage error
        assert "tests without a cost marker" in output and "test_new.py::test_plain" in output
        assert "test_new.py::test_mixed (unit, workflow)" in output
        assert "test_fine" not in output.split("ERROR")[-1]


def test_marked_tests_collect_and_an_unknown_marker_is_refused(tmp_path):
    (tmp_path / "test_new.py").write_text(NEW_TESTS.split("\n\n\ndef test_plain")[0] + "\n")
    (tmp_path / "test_ok.py").write_text(
        "import pytest\n\n\n@pytest.mark.unit\ndef test_fine():\n    pass\n")
    assert collect(tmp_path).returncode == 0
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n\n@pytest.mark.uint\ndef test_typo():\n    pass\n")
    result = collect(tmp_path)
    assert result.returncode != 0 and "'uint' not found in `markers`" in result.stdout + \
        result.stderr
