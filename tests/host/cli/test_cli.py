"""The ``duel`` command (scripts/duel/host/cli/): help, exit codes, ``duel show``, the older
script paths and the launcher scripts/setup.sh writes."""
import argparse
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import DUEL, REPO, SCRIPTS
from duel.cell import contract
from duel.host.cli import main
from duel.host.plan import layout
from duel.host.render import outcome
from duel.host.store import archive, questions
from duel.host.tables import summary

pytestmark = pytest.mark.unit



def command_lines(parser, words=()):
    """Every subcommand ``parser`` holds, and their own ('store add'), as the command builds
    them: a subcommand added to the table (cli/main.py) or to another's verbs is here."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield " ".join(words + (name,))
                yield from command_lines(subparser, words + (name,))


SUBCOMMANDS = list(command_lines(main.parser()))


def test_the_subcommands_are_read_from_the_command_itself():
    assert [line for line in SUBCOMMANDS if " " not in line] == list(main.SUBCOMMANDS)
    assert {"image build", "image run", "store add", "store sql"} <= set(SUBCOMMANDS)


def duel(*arguments, cwd=None):
    return subprocess.run(DUEL + [str(a) for a in arguments], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def finished_run(folder, failed=False):
    """A run folder with a real results/summary.parquet of three points (one failed)."""
    rows = []
    for length, status, message in ((8, "ok", None), (16, "ok", None),
                                    (32, "error" if failed else "ok",
                                     "ValueError: broke\nat x" if failed else None)):
        row = contract.empty_row()
        row.update(model="m", framework="pytorch", mode="eager", batch_size=1, seq_len=length,
                   status=status, message=message)
        rows.append(row)
    frame = pd.DataFrame(rows)
    os.makedirs(os.path.join(str(folder), "results"))
    frame.to_parquet(os.path.join(str(folder), "results", "summary.parquet"))
    return summary.migrated(frame)  # as every reader of a summary sees it


def test_duel_help_lists_every_subcommand_and_the_exit_codes():
    result = duel("--help")
    assert result.returncode == 0, result.stderr
    for name in main.SUBCOMMANDS:
        assert re.search(r"^\s+%s\s" % name, result.stdout, flags=re.M), name
    for code in "0123":
        assert re.search(r"^\s+%s\s+\w" % code, result.stdout, flags=re.M), code


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_help_gives_its_exit_codes_and_an_example(subcommand):
    result = duel(*subcommand.split(), "--help")
    assert result.returncode == 0, result.stderr
    usage, _, rest = result.stdout.partition("exit status:")
    assert usage.startswith("usage: duel %s" % subcommand), usage
    assert re.search(r"^\s+0\s+\w", rest, flags=re.M), rest
    assert re.search(r"^\s+2\s+bad input", rest, flags=re.M), rest
    assert re.search(r"^examples?:\n\s+duel %s" % subcommand, rest, flags=re.M), rest


def bad_inputs(tmp_path):
    """{case: the arguments}; the folder ``broken`` holds a summary.parquet that is not one."""
    return {
        "no subcommand": [],
        "unknown subcommand": ["frobnicate"],
        "show: no run": ["show", tmp_path / "nowhere"],
        "show: unreadable summary": ["show", tmp_path / "broken"],
        "show: unknown option": ["show", "--yaml"],
        "compare: no run": ["compare", tmp_path / "a", tmp_path / "b", "--output",
                            tmp_path / "out"],
        "compare: bad key": ["compare", "a", "b", "--ignore", "era,colour"],
        "compare: bad number": ["compare", "a", "b", "--threshold", "-1"],
        "rebuild: no output": ["rebuild", tmp_path],
        "rebuild: not a run": ["rebuild", tmp_path / "nowhere", "--output", tmp_path / "out"],
        "rebuild: empty list": ["rebuild", tmp_path, "--output", tmp_path / "out", "--models", ","],
        "lock: unknown lock": ["lock", "--only", "envs/nowhere.txt"],
        "image: no verb": ["image"],
        "image build: bad device": ["image", "build", "current", "tpu"],
        "image build: unknown era": ["image", "build", "nineties", "cpu"],
        "image build: lock without name": ["image", "build", "current", "cpu", "--lock", "x.txt"],
        "image run: no command": ["image", "run", "--image", "x", "--threads", "1", "--checkout",
                                  "."],
    }


@pytest.mark.parametrize("case", sorted(bad_inputs(pathlib.Path("unused"))))
def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path, case):
    (tmp_path / "broken" / "results").mkdir(parents=True)
    (tmp_path / "broken" / "results" / "summary.parquet").write_text("not parquet")
    result = duel(*bad_inputs(tmp_path)[case])
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("duel") and "error: " in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_show_prints_the_end_of_run_lines_and_exits_0_when_every_point_is_ok(tmp_path):
    frame = finished_run(tmp_path / "run")
    result = duel("show", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == outcome.lines(frame)
    assert result.stdout.startswith("Duel: 3 points: 3 ok.")
    assert duel("show", cwd=str(tmp_path / "run")).stdout == result.stdout  # RUN_DIR: .
    assert duel("show", tmp_path / "run" / "results").stdout == result.stdout


def test_show_exits_1_on_a_failed_point_and_names_its_message(tmp_path):
    frame = finished_run(tmp_path / "run", failed=True)
    result = duel("show", tmp_path / "run")
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == outcome.lines(frame)
    assert "1 of 3 points FAILED" in result.stdout
    assert "m pytorch eager 1x32 (error, 1 point): ValueError: broke" in result.stdout


@pytest.mark.parametrize("failed", [False, True])
def test_show_json_has_the_same_lines_and_the_counts(tmp_path, failed):
    frame = finished_run(tmp_path / "run", failed=failed)
    result = duel("show", tmp_path / "run", "--json")
    assert result.returncode == int(failed), result.stderr
    assert json.loads(result.stdout) == {"lines": outcome.lines(frame), "points": 3,
                                         "failed": int(failed)}


def test_the_installed_command_runs_this_checkout_from_any_folder(tmp_path):
    """``duel`` is the package's console script (pyproject.toml), installed editable by
    scripts/setup.sh: it runs the checkout's code wherever it is started."""
    result = subprocess.run(DUEL + ["--help"], cwd=str(tmp_path), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: duel")
    where = subprocess.run([sys.executable, "-c", "import duel; print(duel.__file__)"],
                           cwd=str(tmp_path), capture_output=True, text=True, check=True)
    assert where.stdout.strip() == os.path.join(SCRIPTS, "duel", "__init__.py")


def test_no_script_or_rule_puts_a_path_on_sys_path():
    """The package is imported as installed (or through PYTHONPATH under an era's own
    interpreter), never by a script editing the import path."""
    edits = []
    for folder in ("scripts", "rules", "benchmarks"):
        for root, _, names in os.walk(os.path.join(REPO, folder)):
            for name in names:
                if name.endswith((".py", ".smk", ".sh")):
                    with open(os.path.join(root, name)) as handle:
                        if re.search(r"sys\.path\.(insert|append)", handle.read()):
                            edits.append(os.path.relpath(os.path.join(root, name), REPO))
    assert edits == []


def test_show_prints_the_generation_verdict_of_a_real_generation_run(tmp_path):
    """A run folder of a stored real generation run (tests/data/store-8220d59), its statistics
    made as the workflow makes them: duel show gives per pair of modes the ratio of time to
    first token and per output token with their intervals, tokens per second side by side and
    the tokens that agreed."""
    store = os.path.join(REPO, "tests", "data", "store-8220d59")
    frame = questions.run_frame(store, archive.run_ids(store)[0])
    results = tmp_path / "run" / "results"
    (results / "statistics").mkdir(parents=True)
    frame.to_parquet(results / "summary.parquet")
    spec = importlib.util.spec_from_file_location(
        "compute_statistics", os.path.join(SCRIPTS, "compute_statistics.py"))
    statistics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(statistics)
    statistics.main(*[layout.at(name, results=str(results)) for name in (
        layout.SUMMARY, layout.RATIOS, layout.PAIRS, layout.HEADLINE, layout.NOISE,
        layout.STATISTICS_PAGE)], 0.05, layout.at(layout.GENERATION, results=str(results)))
    result = duel("show", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("Generation (PyTorch / TensorFlow; < 1: PyTorch faster):")
    assert lines[start + 1].startswith("  PyTorch eager vs TensorFlow eager (current cpu fp32 "
                                       "generation duel), 1 points, 2 processes per cell")
    assert re.fullmatch(r"    time to first token: 0\.\d\d \[0\.\d\d, 0\.\d\d\] PyTorch faster",
                        lines[start + 2]), lines[start + 2]
    assert re.fullmatch(r"    time per output token: 0\.\d\d \[0\.\d\d, 0\.\d\d\] PyTorch "
                        r"faster", lines[start + 3]), lines[start + 3]
    assert re.fullmatch(r"    tokens per second: PyTorch \d+\.\d, TensorFlow \d+\.\d",
                        lines[start + 4]), lines[start + 4]
    assert "the same at 1 points" in lines[start + 5] and "differing at none" in lines[start + 5]
