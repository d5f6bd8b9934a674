"""Rules the code itself must keep: 2019-compatible in-cell code, lint, format, pinned envs."""
import ast
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO
from duel.cell import locks

pytestmark = pytest.mark.unit

CELL_CODE = [os.path.join(REPO, "scripts", "duel", "cell"),
             os.path.join(REPO, "scripts", "run_cell.py"),
             # run by the era's own interpreter too (rules/deploy.smk)
             os.path.join(REPO, "scripts", "export_artifacts.py"),
             os.path.join(REPO, "scripts", "build_runner.py")]
ALLOWED_IMPORTS = {"numpy", "pyarrow", "torch", "tensorflow", "transformers", "duel",
                   "run_cell"}  # the project's own in-cell code


def python_files(paths):
    for path in paths:
        if path.endswith(".py"):
            yield path
        for folder, _, names in os.walk(path):
            for name in names:
                if name.endswith(".py"):
                    yield os.path.join(folder, name)


def test_in_cell_code_runs_on_python_3_6():
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "vermin"), "--target=3.6-", "--violations", "--no-tips",
         "--eval-annotations", "--backport", "typing", *CELL_CODE],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_in_cell_code_imports_only_stdlib_numpy_pyarrow_frameworks_transformers():
    for path in python_files(CELL_CODE):
        tree = ast.parse(open(path).read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in sys.stdlib_module_names or root in ALLOWED_IMPORTS, (path, root)


def test_workflow_is_lint_clean():
    result = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO,
                            capture_output=True, text=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Lints for" not in output, output


def test_workflow_is_snakefmt_formatted():
    result = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "Snakefile", "rules"],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


LOCK_FILES = sorted(name[:-len(".txt")] for name in os.listdir(os.path.join(REPO, "envs"))
                    if name.endswith(".txt") and "# requires-python:" in
                    open(os.path.join(REPO, "envs", name)).read())


def test_every_era_and_device_has_a_lock_file():
    assert LOCK_FILES == ["current-cpu", "current-cuda", "hf2019", "hf2019-cuda"]


@pytest.mark.parametrize("era", LOCK_FILES)
def test_conda_env_pins_equal_the_lock_file(era):
    with open(os.path.join(REPO, "envs", era + ".txt")) as handle:
        text = handle.read()
    python = re.search(r"# requires-python: (\S+)", text).group(1)
    requirements = locks.read_pins(os.path.join(REPO, "envs", era + ".txt"))
    with open(os.path.join(REPO, "envs", era + ".yaml")) as handle:
        environment = yaml.safe_load(handle)
    pip = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    assert all("==" in pin for pin in pip)  # every package pinned exactly
    assert dict((locks.canonical(pin.split("==")[0]), pin.split("==")[1]) for pin in pip) == requirements
    assert "python=" + python in environment["dependencies"]


def test_the_running_environment_is_the_pinned_one():
    from importlib.metadata import version

    for name, wanted in locks.read_pins(os.path.join(REPO, "envs", "current-cpu.txt")).items():
        assert version(name) == wanted, name  # 2.13.0+cpu: the CPU build itself


def lock_files():
    for folder in ("envs", os.path.join("tests", "data", "envs")):
        for name in sorted(os.listdir(os.path.join(REPO, folder))):
            if name.endswith(".txt"):
                yield os.path.join(folder, name)


PATH_WORD = re.compile(r"(?:^|\s)(?:-[rc]|--requirement|--constraint|--find-links|-f)\s+(\S+)"
                       r"|(?:^|\s)((?:/|file:|~)\S*)")


@pytest.mark.parametrize("lock", list(lock_files()))
def test_no_lock_file_names_a_path_outside_the_checkout(lock):
    """A lock file is read on other machines: a path it names (uv's `# via -c FILE` notes, an
    option line) must be inside the checkout, relative to it."""
    outside = []
    with open(os.path.join(REPO, lock)) as handle:
        for number, line in enumerate(handle, 1):
            for named in PATH_WORD.findall(line):
                path = named[0] or named[1]
                resolved = os.path.normpath(os.path.join(REPO, path))
                if os.path.isabs(path) or ":" in path or path.startswith("~") or \
                        not resolved.startswith(REPO + os.sep):
                    outside.append("line %d: %s" % (number, line.strip()))
    assert not outside, "\n".join(outside)


def test_the_lock_path_rule_finds_a_path_outside_the_checkout():
    assert PATH_WORD.findall("    #   -c /tmp/i13/freeze.txt")[0][0] == "/tmp/i13/freeze.txt"
    assert PATH_WORD.findall("--find-links file:///opt/wheels")[0][0] == "file:///opt/wheels"
    assert PATH_WORD.findall("    #   -r envs/current-cpu.in")[0][0] == "envs/current-cpu.in"
