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
from duel.host.stacks import eras

pytestmark = pytest.mark.unit

# The Python 3.6 boundary: the in-cell package, whose commands (duel/cell/commands) the rules
# start with an era's own interpreter.
CELL_CODE = [os.path.join(REPO, "scripts", "duel", "cell")]
ALLOWED_IMPORTS = {"numpy", "pyarrow", "torch", "tensorflow", "transformers", "duel"}


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


SCRIPTS = os.path.join(REPO, "scripts")


def test_the_cell_commands_are_exactly_what_the_rules_start_with_an_era_interpreter():
    """The other side of the boundary: every module a rule runs with an era's interpreter is in
    duel/cell/commands, and nothing else is."""
    started = set()
    for name in os.listdir(os.path.join(REPO, "rules")):
        with open(os.path.join(REPO, "rules", name)) as handle:
            started.update(re.findall(r'jobs\.cell_command\("(\w+)"\)', handle.read()))
    commands = os.path.join(SCRIPTS, "duel", "cell", "commands")
    present = set(name[:-len(".py")] for name in os.listdir(commands)
                  if name.endswith(".py") and name != "__init__.py")
    assert started and started == present, (started, present)


# The host packages in import order: each imports only itself and those before it. store and cli
# are the rooms of the results store (over the run manifests and the verdicts) and the command
# line (over everything).
HOST_LAYERS = ("stacks", "plan", "tables", "verdicts", "render", "compare", "provenance", "store",
               "workflow", "bisect", "cli")


def module_name(path, root=SCRIPTS):
    name = os.path.relpath(path, root)[:-len(".py")].replace(os.sep, ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def imported_names(path, root=SCRIPTS):
    """Every module name an import in ``path`` can bind, relative ones resolved, imports inside
    functions included: ``from a import b`` yields ``a`` and ``a.b``."""
    name = module_name(path, root)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield base
            for alias in node.names:
                yield base + "." + alias.name


def import_graph(root=SCRIPTS):
    """{module: the project modules it imports} over every Python file under ``root``."""
    files = {module_name(path, root): path for path in python_files([root])}
    return {name: sorted({target for target in imported_names(path, root)
                          if target in files and target != name})
            for name, path in files.items()}


def cycles(graph):
    """The import circles of ``graph``, each as the path that closes it."""
    state, stack, found = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in graph[node]:
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def cross_imports(root=SCRIPTS):
    """In-cell code importing project code outside it, and host packages importing upward."""
    found = []
    for path in python_files([os.path.join(root, "duel")]):
        name = module_name(path, root)
        for target in imported_names(path, root):
            if not target.startswith("duel.") and target != "duel":
                continue
            if name.startswith("duel.cell") and not target.startswith("duel.cell"):
                found.append("%s imports %s (in-cell code imports only in-cell code)"
                             % (name, target))
            parts, aimed = name.split("."), target.split(".")
            if parts[1] == "host" and len(parts) > 2 and aimed[:2] == ["duel", "host"] \
                    and len(aimed) > 2 and aimed[2] in HOST_LAYERS:
                if parts[2] not in HOST_LAYERS:
                    found.append("%s: not a package of HOST_LAYERS" % name)
                elif HOST_LAYERS.index(aimed[2]) > HOST_LAYERS.index(parts[2]):
                    found.append("%s imports %s (upward: the order is %s)"
                                 % (name, target, ", ".join(HOST_LAYERS)))
    return found


def test_no_import_circle_in_scripts():
    assert cycles(import_graph()) == []


def test_in_cell_code_and_host_packages_import_only_what_their_place_allows():
    assert cross_imports() == []


def write_tree(root, files):
    for relative, text in files.items():
        path = os.path.join(str(root), relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)


def test_the_import_rules_find_a_circle_a_cell_to_host_import_and_an_upward_import(tmp_path):
    write_tree(tmp_path, {
        "duel/__init__.py": "", "duel/cell/__init__.py": "", "duel/host/__init__.py": "",
        "duel/cell/shard.py": "def f():\n    from duel.host.tables import summary\n",
        "duel/cell/a.py": "from . import b\n", "duel/cell/b.py": "from .a import x\n",
        "duel/host/tables/__init__.py": "", "duel/host/tables/summary.py": "",
        "duel/host/stacks/__init__.py": "",
        "duel/host/stacks/eras.py": "from duel.host.tables import summary\n",
    })
    assert cycles(import_graph(str(tmp_path))) == [["duel.cell.a", "duel.cell.b", "duel.cell.a"]]
    found = cross_imports(str(tmp_path))
    assert any(line.startswith("duel.cell.shard imports duel.host.tables") for line in found)
    assert any(line.startswith("duel.host.stacks.eras imports duel.host.tables (upward")
               for line in found)


def test_host_code_is_packages_each_saying_its_job():
    host = os.path.join(SCRIPTS, "duel", "host")
    loose = [name for name in os.listdir(host)
             if name.endswith(".py") and name != "__init__.py"]
    assert loose == [], "host modules outside a package: %s" % loose
    packages = sorted(name for name in os.listdir(host)
                      if os.path.isfile(os.path.join(host, name, "__init__.py")))
    assert set(packages) <= set(HOST_LAYERS), packages
    for package in packages:
        tree = ast.parse(open(os.path.join(host, package, "__init__.py")).read())
        assert ast.get_docstring(tree), "duel/host/%s/__init__.py has no docstring" % package


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
    """Each lock of envs/eras.yaml, and only those, is an era's lock (with its conda twin)."""
    declared = sorted(os.path.basename(lock)[:-len(".txt")]
                      for era in eras.registry(REPO).values() for lock in era.locks.values())
    assert LOCK_FILES == declared and "current-cpu" in declared and "hf2019" in declared


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
