"""The ``duel`` command (scripts/duel/host/cli/): help, exit codes, ``duel show``, the older
script paths and the launcher scripts/setup.sh writes."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO, SCRIPTS
from duel.cell import contract
from duel.host.render import outcome

pytestmark = pytest.mark.unit

DUEL = [sys.executable, os.path.join(SCRIPTS, "duel_cli.py")]
SUBCOMMANDS = ["show", "compare", "rebuild", "lock", "image", "image build", "image run"]


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
    return frame


def test_duel_help_lists_every_subcommand_and_the_exit_codes():
    result = duel("--help")
    assert result.returncode == 0, result.stderr
    for name in ("show", "compare", "rebuild", "lock", "image"):
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


@pytest.mark.parametrize("script, words", [
    ("compare_runs.py", "duel compare"), ("rebuild_run.py", "duel rebuild"),
    ("lock.py", "duel lock"), ("build_image.py", "duel image build")])
def test_the_older_script_paths_name_the_command_and_do_the_same(script, words):
    result = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert result.stderr == "scripts/%s runs `%s`; call that\n" % (script, words)
    assert result.stdout.startswith("usage: %s" % words)


def test_an_older_script_path_refuses_bad_input_as_the_command_does(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(SCRIPTS, "compare_runs.py"),
                             str(tmp_path / "a"), str(tmp_path / "b")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    notice, refusal = result.stderr.splitlines()
    assert "`duel compare`" in notice
    assert refusal == "duel compare: error: %s: no such file or directory" % (tmp_path / "a")


def test_the_launcher_setup_sh_writes_runs_the_checkout_it_sits_in(tmp_path):
    """The printf line of scripts/setup.sh, run in a stand-in checkout whose .venv/bin/python
    hands over to this interpreter."""
    with open(os.path.join(SCRIPTS, "setup.sh")) as handle:
        (line,) = [line for line in handle.read().replace("\\\n", " ").splitlines()
                   if "> .venv/bin/duel" in line]
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    os.symlink(SCRIPTS, str(checkout / "scripts"))
    python = checkout / ".venv" / "bin" / "python"
    python.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    python.chmod(0o755)
    subprocess.run(["bash", "-c", line], cwd=str(checkout), check=True)
    (checkout / ".venv" / "bin" / "duel").chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([str(checkout / ".venv" / "bin" / "duel"), "--help"],
                            cwd=str(elsewhere), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: duel")
