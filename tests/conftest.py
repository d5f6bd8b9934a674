"""Shared helpers: paths, and running the real workflow in a temporary directory."""
import contextlib
import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import yaml

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
SCRIPTS = os.path.join(REPO, "scripts")
MODELS = os.path.join(REPO, "config", "models")
TEST_MODELS = os.path.join(REPO, "tests", "data", "models")
# The installed package's command (scripts/setup.sh), beside the interpreter running the tests.
DUEL = [os.path.join(os.path.dirname(sys.executable), "duel")]
# What an era's own interpreter needs to import the package: the checkout's scripts folder.
PACKAGE_PATH = {"PYTHONPATH": SCRIPTS}


def cell_command(name, python=sys.executable):
    """An in-cell command (duel/cell/commands/) as a job starts it."""
    return [python, "-m", "duel.cell.commands." + name]

# Timing settings that keep test points short; the method is the same as in real runs. One
# process per cell: tests of replicates ask for more themselves.
QUICK = {
    "replicates": 1,
    "max_replicates": 1,  # no settling rounds unless a test asks for them
    "duel": {"warmup_calls": 1, "min_samples": 3, "min_time_s": 0.02, "max_samples": 50,
             "max_time_s": 5.0},
    "timeit": {"repeat": 3, "number": 2},
    # The suite's two workers share the machine: a point measured again would meet the other
    # worker's load again. Runs of the suite measure once (test_disturbed_cell measures again).
    "disturbance": {"remeasures": 0, "attempts": 1},
}


def snakemake(workdir, *args, timeout=1200, check=True, env=None):
    """Run the real workflow from the checkout, writing under ``workdir``."""
    command = [sys.executable, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
               "--directory", str(workdir), *args]
    result = subprocess.run(command, cwd=str(workdir), capture_output=True, text=True,
                            timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError("snakemake failed (%d):\n%s\n%s"
                             % (result.returncode, result.stdout[-4000:], result.stderr[-8000:]))
    return result


@contextlib.contextmanager
def planned_workflow(workdir, **config):
    """The real workflow planned in this process (Snakemake's API, as `snakemake -n` plans it)
    under ``workdir``, ``config`` over config/config.yaml: its ``Workflow``, whose globals hold
    what rules/common.smk made (JOBS, EVENTS). The working folder is put back afterwards."""
    from pathlib import Path

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, OutputSettings, ResourceSettings,
                                          StorageSettings)
    here = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings()) as api:
            planned = api.workflow(
                resource_settings=ResourceSettings(cores=2),
                config_settings=ConfigSettings(config=config),
                storage_settings=StorageSettings(), workdir=Path(str(workdir)),
                snakefile=Path(REPO) / "Snakefile")
            yield planned._workflow  # the API's one handle on the Workflow it loaded
    finally:
        os.chdir(here)


def plan_as_common_smk(overrides, warn=None, config_out=None):
    """The planning of rules/common.smk, in this process, on ``--config`` ``overrides``
    (parsed and merged over config/config.yaml as Snakemake does): its cells; ``config_out``
    gets the config as planned."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config, validate

    from duel.host.plan import config_keys, planner, probes
    with open(os.path.join(REPO, "config", "config.yaml")) as handle:
        config = yaml.safe_load(handle)
    update_config(config, parse_config(overrides))
    config_keys.prepare_config(config, warn)
    validate(config, os.path.join(REPO, "config", "schema", "config.schema.yaml"))
    cells = planner.plan_cells(config, REPO)
    probes.check_devices(config["devices"], has_gpu=lambda: False)
    if config_out is not None:
        config_out.update(config)
    return cells


def shard_file(workdir, framework, mode, model, era="current", replicate=1):
    """Where the workflow wrote the shard of a cpu fp32 inference cell's ``mode`` (or modes,
    'eager+function') under ``workdir``: its process's, which may have measured other modes
    beside it; where none was written, the path a process of ``mode`` would have."""
    from duel.cell import modes
    from duel.host.plan import planner

    def path(process_modes):
        cell = planner.Cell(era, "cpu", framework, process_modes, "fp32", "inference", model,
                            replicate)
        return os.path.join(str(workdir), planner.shard_path(cell))
    for found in glob.glob(path("*")):
        folder = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(found)))))
        if mode == folder or mode in modes.members(folder):
            return found
    return path(mode)


def write_config(workdir, **values):
    """A config file in ``workdir`` (merged over config/config.yaml by Snakemake)."""
    path = os.path.join(str(workdir), "test-config.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(values, handle)
    return path


@pytest.fixture
def models_dir(tmp_path):
    """A models folder with two real 2019 checkpoints and the tiny failing fixture."""
    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("distilbert-base-uncased.json", "gpt2.json"):
        shutil.copy(os.path.join(MODELS, name), str(folder))
    shutil.copy(os.path.join(TEST_MODELS, "tiny-bert-16pos.json"), str(folder))
    return str(folder)


# Small real shards, written by the shard writer, for the tests of what reads them (the merge,
# the spreadsheet, the 2019 history, comparisons).
from duel.cell import contract, locks, shard  # noqa: E402

POINTS = [(1, 8), (1, 64), (2, 8)]


def cell_rows(framework, mode, model, method, scale, status_of=None):
    """One cell's rows at POINTS, ok unless ``status_of`` names a point's status."""
    rows = []
    for batch, length in POINTS:
        row = contract.empty_row()
        row.update(era="current", device="cpu", framework=framework, mode=mode,
                   precision="fp32", task="inference", model=model, batch_size=batch,
                   seq_len=length, method=method, cpu_model="Test CPU", threads=2,
                   cpu_flags="avx2,fma,avx", cpu_max_mhz=2000.0,
                   framework_version="9.9", python="3.11.7")
        status = (status_of or {}).get((batch, length), "ok")
        row["status"] = status
        if status == "ok":
            samples = [scale * batch * length / 3.0 + i / 7.0 for i in range(5)]
            row.update(samples=samples, n_samples=5, median=samples[2],
                       mean=sum(samples) / 5.0 + 0.001, min=samples[0], max=samples[-1],
                       achieved_gflops=16.0 * batch)
        else:
            row["message"] = "RuntimeError: injected"
        rows.append(row)
    return rows


@pytest.fixture
def shards(tmp_path):
    """Six cells' shards: four cells on their locked stack, two on a drifted one."""
    paths = []
    specs = [
        ("pytorch", "eager", "gpt2", "duel", 1.0, None),
        ("tensorflow", "eager", "gpt2", "duel", 2.0, {(1, 64): "oom"}),
        ("pytorch", "eager", "bert", "duel", 3.0, {(2, 8): "skipped"}),
        ("tensorflow", "eager", "bert", "duel", 4.0, None),
        ("pytorch", "eager", "distilgpt2", "timeit", 5.0, None),
        ("pytorch", "torchscript", "gpt2", "duel", 0.5, {(1, 64): "error"}),
    ]
    for index, spec in enumerate(specs):
        path = str(tmp_path / ("shard-%d.parquet" % index))
        rows = cell_rows(*spec)
        for row in rows:  # two software stacks: four cells as locked, two drifted
            exact = index < 4
            row.update(lock_file="envs/current-cpu.txt", lock_sha256="1" * 64,
                       installed_sha256=("a" if exact else "b") * 64, lock_match=exact,
                       lock_drift="" if exact else "six 1.17.0 -> 1.16.0",
                       drift_accepted=not exact, runner="native")
        shard.write_shard(rows, path)
        paths.append(path)
    return paths


def era_shards(tmp_path):
    """One timeit cell's shards in each era, the 2019 one with a point out of memory."""
    paths = []
    for era, scale, status_of in (("hf2019", 2.0, {(2, 8): "oom"}), ("current", 1.0, None)):
        rows = cell_rows("pytorch", "eager", "gpt2", "timeit", scale, status_of)
        for row in rows:
            row["era"] = era
            row["framework_version"] = "1.3.0" if era == "hf2019" else "2.13.0"
        path = str(tmp_path / ("%s.parquet" % era))
        shard.write_shard(rows, path)
        paths.append(path)
    return paths


# Made-up inputs with a known answer that test modules of several folders share.
def era_python(era):
    """The interpreter of ``era``'s environment (built first where it is missing)."""
    from duel.host.stacks import eras
    if era == "current":
        return sys.executable
    lock = eras.lock_file(REPO, era, "cpu")
    prefix = eras.keyed_prefix(os.path.join(REPO, ".era-envs"), era, "cpu", lock)
    with open(os.devnull, "w") as log:
        eras.ensure_env(era, lock, prefix, log)
    return eras.env_python(prefix)


# A model config in models_dir that planning cannot read: the text, and words of its one line.
BROKEN_MODEL_CONFIGS = {
    "not JSON": ("{\"name\": \"broken\", family: bert}", "not valid JSON (Expecting property "
                 "name enclosed in double quotes: line 1 column 20"),
    "a JSON list": ("[1, 2]", "a model config is a JSON object"),
    "an unknown family": (json.dumps({"name": "broken", "family": "gpt5", "architecture": {}}),
                          "model 'broken' cannot run: transformers "),
    "a type without a TensorFlow class": (json.dumps({"name": "broken", "family": "llama",
                                                      "architecture": {"vocab_size": 10}}),
                                          "model 'broken' cannot run: transformers "),
    "no family": (json.dumps({"name": "broken", "architecture": {}}),
                  "no 'family' (transformers' model_type"),
    "another name": (json.dumps({"name": "other", "family": "bert", "architecture": {}}),
                     "names model 'other', expected 'broken'"),
    "no architecture": (json.dumps({"name": "broken", "family": "bert"}),
                        "no 'architecture' object"),
    "a key missing": (json.dumps({"name": "broken", "family": "gpt2",
                                  "architecture": {"n_embd": 8, "vocab_size": 10}}),
                      "'architecture' lacks n_layer"),
    "a key not a number": (json.dumps({"name": "broken", "family": "bert", "architecture": {
        "hidden_size": "768", "num_hidden_layers": 2, "vocab_size": 10}}),
        "'architecture' lacks hidden_size"),
}


# A run's rows, synthetic: two cells (CELLS) at five points (GRID), each replicate its own level.
CELLS = [("pytorch", "eager"), ("tensorflow", "function")]
GRID = [(1, 8), (1, 128), (2, 8), (2, 128), (4, 32)]


def environment(framework, threads=2):
    """What a cell of ``framework`` records of its machine and software, one machine's."""
    return dict(
        python="3.11.9", framework_version="2.13.0+cpu" if framework == "pytorch" else "2.21.0",
        transformers_version="4.57.6", numpy_version="2.3.5", pyarrow_version="26.0.1",
        device_name="cpu", cpu_model="AMD EPYC 7B13", cpu_flags="avx2 fma", cpu_max_mhz=None,
        logical_cpus=2, threads=threads, hostname="duel-1", platform="Linux-6.1-x86_64",
        runner="native", git_commit="9e5c9a1", config_sha256="ab" * 32, seed=0)


def synthetic_rows(replicates=3, seed=0, between=0.04, within=0.01, slow=None, era="current",
                   started="2026-12-01T06:00:00+00:00", env=None, grid=GRID, status=None,
                   method="duel", models=("bert",)):
    """Rows of a run: every replicate of a cell sits at its own level (lognormal, ``between``),
    samples scatter around it (``within``); ``slow`` multiplies chosen points' times."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        for framework, mode in CELLS:
            for replicate in range(1, replicates + 1):
                level = float(np.exp(rng.normal(0.0, between)))
                for batch, length in grid:
                    row = contract.empty_row()
                    row.update(era=era, device="cpu", framework=framework, mode=mode,
                               precision="fp32", task="inference", model=model,
                               replicate=replicate, batch_size=batch, seq_len=length,
                               method=method, started_at=started, attempt=1, remeasure=0,
                               counted=True)  # as attempts.py marks every row it keeps
                    row.update(environment(framework))
                    row.update((env or {}).get(framework, {}))
                    point_status = (status or {}).get((framework, batch, length), "ok")
                    row["status"] = point_status
                    if point_status != "ok":
                        row["message"] = "out of memory" if point_status == "oom" else "boom"
                        rows.append(row)
                        continue
                    factor = (slow or {}).get((framework, batch, length), 1.0)
                    centre = 2.0 * batch * length ** 0.5 * level * factor
                    samples = centre * np.exp(rng.normal(0.0, within, 30))
                    row.update(samples=[float(v) for v in samples], n_samples=30,
                               mean=float(samples.mean()), median=float(np.median(samples)),
                               std=float(samples.std(ddof=1)), min=float(samples.min()),
                               max=float(samples.max()), p90=float(np.percentile(samples, 90)))
                    rows.append(row)
    return rows


def pooled_figure(groups, statistic="median"):
    """A point's figure from its processes' samples, by the one pooling (replicates.pooled)."""
    from duel.host.tables import replicates
    from duel.host.verdicts import statistics
    return float(replicates.pooled(statistics.replicate_figures(groups, statistic),
                                   [len(group) for group in groups], statistic))


# A bisection's record as duel bisect writes it (bisect/answer.py): a step between two releases.
RECORD = {
    "name": "bert-tf-function-2.11-2.12", "model": "bert-base-cased", "framework": "tensorflow",
    "mode": "function",
    "batch_size": 1, "seq_len": 128, "method": "duel", "machine": "vm", "cpu_model": "AMD EPYC",
    "total": {"ratio": 0.42, "low": 0.41, "high": 0.43, "clear": True},
    "findings": [{"kind": "step", "before": 0, "after": 1, "ratio": 0.42, "low": 0.41,
                  "high": 0.43, "reason": None, "confounded": ["python"],
                  "coincides": ["build onednn: false -> true", "python: 3.7 -> 3.11"]}],
    "releases": [
        {"version": "2.11.0", "date": "2022-11-18", "status": "measured", "figure_ms": 359.0,
         "low_ms": 350.0, "high_ms": 368.0, "python": "3.7", "build": {"onednn": False}},
        {"version": "2.12.1", "date": "2023-07-05", "status": "measured", "figure_ms": 150.0,
         "low_ms": 149.0, "high_ms": 151.0, "python": "3.11", "build": {"onednn": True}}],
    "environments_built": 1, "seconds": 600.0}
def generation_rows(era, framework, mode, first_ms, per_ms, version, processes=3):
    """A generation cell's rows: gpt2 at 1x8 and 2x8, ``processes`` processes each, 8 new
    tokens whose first takes ``first_ms`` x batch and each later ``per_ms`` x batch (a process
    a little slower than the one before), every token the same as PyTorch eager's."""
    rows = []
    for batch, length in ((1, 8), (2, 8)):
        for replicate in range(1, processes + 1):
            slower = 1.0 + 0.01 * replicate
            first = [first_ms * batch * slower + i / 100.0 for i in range(5)]
            whole = [value + 7 * per_ms * batch * slower for value in first]
            row = contract.empty_row()
            row.update(era=era, device="cpu", framework=framework, mode=mode,
                       precision="fp32", task="generation", model="gpt2", batch_size=batch,
                       seq_len=length, method="duel", cpu_model="Test CPU", threads=2,
                       framework_version=version, transformers_version="4.31.0",
                       replicate=replicate, status="ok", samples=whole, n_samples=5,
                       median=whole[2], mean=sum(whole) / 5.0, min=whole[0], max=whole[-1],
                       new_tokens=8, first_token_samples=first, first_token_ms=first[2],
                       per_token_ms=(whole[2] - first[2]) / 7, tokens_agree=8,
                       tokens_per_s=batch * 8 / (whole[2] / 1000.0))
            rows.append(row)
    return rows


def generation_shards(tmp_path):
    """Generation cells in two eras: hf2023 with PyTorch and TensorFlow eager (TensorFlow 2x the
    first token, 3x each later one), current with TensorFlow xla besides (per token 5x
    faster than its eager, first token 1.5x slower)."""
    cells = [("hf2023", "pytorch", "eager", 10.0, 5.0, "2.0.1"),
             ("hf2023", "tensorflow", "eager", 20.0, 15.0, "2.13.0"),
             ("current", "pytorch", "eager", 10.0, 5.0, "2.13.0"),
             ("current", "tensorflow", "eager", 20.0, 15.0, "2.21.0"),
             ("current", "tensorflow", "xla", 30.0, 3.0, "2.21.0")]
    paths = []
    for index, cell in enumerate(cells):
        path = str(tmp_path / ("generation-%d.parquet" % index))
        shard.write_shard(generation_rows(*cell), path)
        paths.append(path)
    return paths


# What a test costs and needs (pytest.ini lists them; README.md, "Tests", gives the subsets).
COST_MARKERS = ("unit", "framework", "workflow", "era", "docker", "slurm", "install")


# The suite runs in two pytest-xdist workers (pytest.ini). A worker takes a whole module at a time,
# so a module's fixtures (a workflow run that several tests read) are made once; the modules that
# share a machine-wide resource go to one worker as one unit, one after another: the private Docker
# engine (one data root) and the SLURM cluster (one bridge, fixed node names) are each started
# by one worker only.
# Modules are named by their path under tests/ (``under_tests``).
SHARED_RESOURCES = {"docker": ("features/test_docker.py", "features/test_docker_hf2019.py"),
                    "slurm": ("features/test_slurm.py", "features/test_slurm_nodes.py")}
UNIT_OF_MODULE = {module: resource for resource, modules in SHARED_RESOURCES.items()
                  for module in modules}
# Costliest modules first, so the long ones do not start last and leave a worker idle at the end.
COST_ORDER = ("docker", "slurm", "era", "install", "workflow", "framework", "unit")


def under_tests(path):
    """A test file's path under tests/, with forward slashes (features/test_docker.py)."""
    return os.path.relpath(os.path.abspath(str(path)), TESTS).replace(os.sep, "/")


def pytest_xdist_make_scheduler(config, log):
    """xdist's load-by-scope scheduler with scopes of our own: a module, or a shared resource's
    modules together (pytest.ini turns off xdist's reordering of scopes by their size)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModuleAndResource(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            path = under_tests(os.path.join(str(config.rootpath), module))
            return UNIT_OF_MODULE.get(path, module)

    return ByModuleAndResource(config, log)


def pytest_collection_modifyitems(config, items):
    """Every test says what it costs: one of COST_MARKERS (``pytestmark`` of its module, or a
    decorator), and ``unit`` alone. A test without one would land in no subset, or in the quick
    one by accident, so the run stops here and names it."""
    unmarked, mixed = [], []
    for item in items:
        names = {mark.name for mark in item.iter_markers()} & set(COST_MARKERS)
        if not names:
            unmarked.append(item.nodeid)
        elif "unit" in names and len(names) > 1:
            mixed.append("%s (%s)" % (item.nodeid, ", ".join(sorted(names))))
    problems = []
    if unmarked:
        problems.append("tests without a cost marker (add `pytestmark = pytest.mark.unit` to the "
                        "module, or mark each test with one of %s; pytest.ini says what each "
                        "means):\n  %s" % (", ".join(COST_MARKERS), "\n  ".join(unmarked)))
    if mixed:
        problems.append("tests marked unit and something costlier (unit means none of the "
                        "others):\n  %s" % "\n  ".join(mixed))
    if problems:
        raise pytest.UsageError("\n".join(problems))
    misplaced = ["%s (marked %s: add its module to SHARED_RESOURCES)" % (item.nodeid, resource)
                 for item in items for resource, modules in SHARED_RESOURCES.items()
                 if item.get_closest_marker(resource)
                 and under_tests(item.path) not in modules]
    if misplaced:
        raise pytest.UsageError("tests that would start a second %s in another worker:\n  %s"
                                % ("/".join(SHARED_RESOURCES), "\n  ".join(misplaced)))
    items[:] = in_cost_order(items)


def in_cost_order(items):
    """``items`` with whole modules moved by their costliest marker (COST_ORDER), the order
    inside a module and among modules of one cost kept."""
    rank = {}
    for item in items:
        module = str(item.fspath)
        names = {mark.name for mark in item.iter_markers()}
        cost = min([COST_ORDER.index(name) for name in names if name in COST_ORDER] or [0])
        rank[module] = min(rank.get(module, cost), cost)
    first_seen = {}
    for index, item in enumerate(items):
        first_seen.setdefault(str(item.fspath), index)
    return sorted(items, key=lambda item: (rank[str(item.fspath)], first_seen[str(item.fspath)]))


# A test marked ``alone`` judges the machine's own noise (a quiet cell is not disturbed), so it
# runs while no other test does: it takes the suite's gate and then its room exclusively; every
# other test passes the gate and holds the room shared, from its setup to its teardown (module
# fixtures included), so the alone test waits for the running test and the next one waits for it.
def _lock_files(config):
    run = getattr(config, "workerinput", {}).get("testrunuid")
    if run is None:  # one process: nothing runs beside a test
        return None
    folder = os.path.join(tempfile.gettempdir(), "duel-tests-%s" % run)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "gate"), os.path.join(folder, "room")


@contextlib.contextmanager
def _held(path, mode):
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    files = _lock_files(item.config)
    if files is None:
        yield
        return
    gate, room = files
    if item.get_closest_marker("alone"):
        with _held(gate, fcntl.LOCK_EX), _held(room, fcntl.LOCK_EX):
            yield
        return
    with _held(gate, fcntl.LOCK_SH):
        pass
    with _held(room, fcntl.LOCK_SH):
        yield


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    """A private Docker engine for the docker tests (tests/docker_engine.py), started once per
    session and shared by every module that needs it."""
    from docker_engine import Engine, EngineError
    log = str(tmp_path_factory.mktemp("engine") / "dockerd.log")
    try:
        with Engine(log) as started:
            yield started
    except EngineError as error:
        pytest.fail("no Docker engine for the docker tests: %s" % error)


def image_built(engine, name, build_arguments, folder, timeout):
    """``name`` from the engine, built first with ``duel image build`` ``build_arguments``
    unless the engine has it already (the build's log in ``folder``): (name, image ID)."""
    log = os.path.join(str(folder), "build.log")

    def docker(*args):
        return subprocess.run(("docker",) + args, env=engine.env, capture_output=True, text=True,
                              timeout=120)

    if docker("image", "inspect", name).returncode != 0:
        with open(log, "w") as handle:
            built = subprocess.run(
                DUEL + ["image", "build"] + list(build_arguments), env=engine.env, stdout=handle,
                stderr=subprocess.STDOUT, timeout=timeout)
        if built.returncode != 0:
            with open(log) as handle:
                pytest.fail("building %s failed:\n%s" % (name, handle.read()[-5000:]))
    found = docker("image", "inspect", "--format", "{{.Id}}", name)
    assert found.returncode == 0, found.stderr
    return name, found.stdout.strip()


# The SLURM executor plugin's own environment (scripts/setup.sh --slurm builds it).
SLURM_PYTHON = os.path.join(REPO, ".venv-slurm", "bin", "python")


def installed_plugin_versions():
    if not os.path.exists(SLURM_PYTHON):
        return None
    result = subprocess.run([SLURM_PYTHON, "-m", "pip", "freeze", "--local",
                             "--disable-pip-version-check"], capture_output=True, text=True)
    return sorted(locks.canonical(line.split("==")[0]) + "==" + line.split("==")[1]
                  for line in result.stdout.split() if "slurm" in line)


def ensure_slurm_venv():
    """.venv-slurm with exactly envs/slurm.txt's pins."""
    wanted = sorted("%s==%s" % pin for pin in
                    locks.read_pins(os.path.join(REPO, "envs", "slurm.txt")).items())
    if installed_plugin_versions() != wanted:
        result = subprocess.run(["bash", os.path.join(REPO, "scripts", "setup.sh"), "--slurm"],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    assert installed_plugin_versions() == wanted


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """The two-node SLURM cluster (tests/slurm_cluster.py), started once per session and shared
    by the slurm modules; the tests fail (never skip) when SLURM cannot start."""
    from slurm_cluster import Cluster, ClusterError, install_packages
    started = time.time()
    try:
        install_packages()
    except ClusterError as error:
        pytest.fail("SLURM cannot be installed: %s" % error)
    ensure_slurm_venv()
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except ClusterError as error:
        cluster.stop()
        pytest.fail("SLURM cannot start: %s" % error)
    sys.stderr.write("\nSLURM ready in %.1f s (install, venv, daemons)\n" % (time.time() - started))
    yield cluster
    cluster.stop()
