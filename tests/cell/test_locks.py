"""Lock files: complete and hashed, installed exactly, a wrong hash refused, drift caught at planning.

The fresh environments are real: scripts/setup.sh in a copy of the checkout (uv from envs/uv.txt,
or pip with --pip), the hf2019 venv the workflow builds, and a scratch interpreter with one
package upgraded by hand that the real workflow plans with.
"""
import contextlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile

import pyarrow.parquet as pq
import pytest

from conftest import PACKAGE_PATH, QUICK, REPO, SCRIPTS, TEST_MODELS, shard_file, write_config
from duel.cell import locks
from duel.host.stacks import eras

INSTALLED = ["envs/current-cpu.txt", "envs/host.txt", "envs/tests.txt", "envs/slurm.txt", "envs/uv.txt",
             "envs/current-cuda.txt", "envs/hf2019.txt", "envs/hf2019-cuda.txt",
             "envs/hf2021.txt", "envs/hf2023.txt",
             "tests/data/envs/current-cpu-pytorch.txt"]
HASH = re.compile(r"^    --hash=sha256:[0-9a-f]{64}( \\)?$")


def path(lock):
    return os.path.join(REPO, lock)


@pytest.mark.unit
@pytest.mark.parametrize("lock", INSTALLED)
def test_every_lock_file_is_complete_pins_each_with_its_hashes(lock):
    pins, hashes = locks.read_pins(path(lock)), locks.read_hashes(path(lock))
    assert pins and set(pins) == set(hashes)
    for line in open(path(lock)):
        line = line.rstrip("\n")
        if line.startswith("    --hash"):
            assert HASH.match(line), line
        elif line.strip() and not line.lstrip().startswith("#"):
            assert locks.PIN.match(line) and line.endswith(" \\"), line  # a pin, hashes follow
    assert all(hashes.values()), [name for name, found in hashes.items() if not found]


@pytest.mark.unit
def test_layered_lock_files_add_to_the_current_era_without_overlap():
    current = locks.read_pins(path("envs/current-cpu.txt"))
    for layer in ("envs/host.txt", "envs/tests.txt", "envs/slurm.txt", "envs/uv.txt"):
        assert not set(locks.read_pins(path(layer))) & set(current), layer
    # The first complete lock is the stack the project was measured with: torch's CPU build,
    # and the build tools torch and tensorflow need at run time.
    assert current["torch"] == "2.13.0+cpu" and "setuptools" in current and "wheel" in current
    assert "py-cpuinfo" not in current


def copy_checkout(tmp_path):
    """What scripts/setup.sh and `duel lock` read: the package, its metadata and the lock files."""
    checkout = tmp_path / "checkout"
    shutil.copytree(SCRIPTS, str(checkout / "scripts"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(REPO, "envs"), str(checkout / "envs"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), str(checkout / name))
    shutil.copytree(os.path.join(REPO, "tests", "data", "envs"),
                    str(checkout / "tests" / "data" / "envs"))
    return checkout


def installed_in(python):
    """The installed set of an interpreter, read by locks.installed inside it."""
    probe = "import json; from duel.cell import locks; print(json.dumps(locks.installed()))"
    answer = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True,
                            env=dict(os.environ, **PACKAGE_PATH))
    return json.loads(answer.stdout)


def union(*lock_files):
    pins = {}
    for lock in lock_files:
        pins.update(locks.read_pins(path(lock)))
    return pins


@pytest.mark.install
def test_setup_installs_exactly_the_locks_and_passes_pip_check(tmp_path):
    """From nothing: .venv (current era, host tools, test tools, uv) and .venv-slurm, hashes checked."""
    checkout = copy_checkout(tmp_path)
    result = subprocess.run(["bash", "scripts/setup.sh", "--tests", "--slurm"],
                            cwd=str(checkout), capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-4000:]
    venv = str(checkout / ".venv" / "bin" / "python")
    assert installed_in(venv) == union("envs/current-cpu.txt", "envs/host.txt", "envs/tests.txt",
                                       "envs/uv.txt")
    slurm = str(checkout / ".venv-slurm" / "bin" / "python")
    assert installed_in(slurm) == union("envs/current-cpu.txt", "envs/host.txt", "envs/tests.txt",
                                        "envs/uv.txt", "envs/slurm.txt")
    for python in (venv, slurm):  # Duel itself: this checkout's package, editable
        where = subprocess.run([python, "-c", "import duel; print(duel.__file__)"],
                               capture_output=True, text=True, check=True, cwd=str(tmp_path))
        assert where.stdout.strip() == str(checkout / "scripts" / "duel" / "__init__.py")
    assert subprocess.run([str(checkout / ".venv" / "bin" / "duel"), "--help"],
                          capture_output=True).returncode == 0
    marker = json.load(open(str(checkout / ".venv" / "duel-env.json")))
    assert marker["lock_sha256"] == locks.lock_sha256(path("envs/current-cpu.txt"))
    assert marker["installer"].startswith("uv ")
    assert marker["installed_sha256"] == locks.set_sha256(installed_in(venv))
    check = subprocess.run([venv, "-m", "pip", "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


@contextlib.contextmanager
def served_index(root, wheel):
    """A simple index (PEP 503) on 127.0.0.1 whose one project is torch, file ``wheel``: its URL,
    and the paths asked of it."""
    project = root / "simple" / "torch"
    project.mkdir(parents=True)
    shutil.copy(str(wheel), str(root / wheel.name))
    (project / "index.html").write_text(
        '<!DOCTYPE html><html><body><a href="../../%s">%s</a></body></html>\n'
        % (wheel.name.replace("+", "%2B"), wheel.name))
    asked = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/simple" % server.server_address[1], asked
    finally:
        server.shutdown()
        server.server_close()


def set_up_with_pips_defaults(checkout, torch_index, uv_cache):
    """scripts/setup.sh in ``checkout`` as on a machine whose pip knows only the default index
    (no configuration, no PIP_ or UV_ variables), with DUEL_TORCH_INDEX=``torch_index``."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("PIP_", "UV_"))}
    environment.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1", UV_CACHE_DIR=str(uv_cache),
                       DUEL_TORCH_INDEX=torch_index)
    return subprocess.run(["bash", "scripts/setup.sh"], cwd=str(checkout), env=environment,
                          capture_output=True, text=True, timeout=1800)


@pytest.mark.install
def test_set_up_with_pips_defaults_takes_torchs_cpu_build_from_the_torch_index(tmp_path):
    """The README's first set-up on a machine with pip's default configuration: the default
    index lacks the +cpu pin, so setup.sh tries again with torch's CPU index, here a mirror on
    127.0.0.1 that holds the one torch wheel. Set-up completes with every lock's hashes checked;
    the same index serving a wheel of other bytes is refused."""
    pin = "torch==" + locks.read_pins(path("envs/current-cpu.txt"))["torch"]
    wheels = tmp_path / "wheels"  # the wheel, from this machine's own sources
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary", ":all:", "-d", str(wheels), pin], check=True, timeout=1200)
    wheel, = wheels.glob("torch-*.whl")
    uv_cache = tmp_path / "uv-cache"
    retry = "setup.sh: this machine's package sources lack a pin; again, with torch's CPU index"
    with served_index(tmp_path / "index", wheel) as (url, asked):
        result = set_up_with_pips_defaults(copy_checkout(tmp_path / "a"), url, uv_cache)
    assert retry in result.stderr.splitlines() and result.returncode == 0, result.stderr[-4000:]
    assert [wheel.name] == [path.rsplit("/", 1)[-1].replace("%2B", "+") for path in asked
                            if path.endswith(".whl")], asked
    venv = str(tmp_path / "a" / "checkout" / ".venv" / "bin" / "python")
    assert installed_in(venv) == union("envs/current-cpu.txt", "envs/host.txt", "envs/uv.txt")
    assert subprocess.run([venv, "-m", "pip", "check"], capture_output=True).returncode == 0

    other = tmp_path / "other" / wheel.name  # same name, other bytes
    other.parent.mkdir()
    with zipfile.ZipFile(str(other), "w") as archive:
        archive.writestr("torch/__init__.py", "")
    with served_index(tmp_path / "other-index", other) as (url, asked):
        result = set_up_with_pips_defaults(copy_checkout(tmp_path / "b"), url, uv_cache)
    said = result.stderr.splitlines()
    assert result.returncode == 1 and retry in said, result.stderr[-4000:]
    assert "Hash mismatch for `%s`" % pin in result.stderr and said[-1].startswith(
        "setup.sh: installing envs/current-cpu.txt envs/host.txt envs/uv.txt failed from this "
        "machine's package sources and from PyTorch's CPU index"), result.stderr[-4000:]


@pytest.mark.unit
def test_a_lock_is_known_by_its_pins_not_its_comments(tmp_path):
    """A reworded header keeps the lock's identity (its environments, images and stored runs);
    any change to a pin, a hash or an option gives a new one."""
    text = open(path("envs/current-cpu.txt")).read()
    variants = {
        "header": text.replace("# Generated from", "# Made from", 1) + "\n# a note\n",
        "pin": text.replace("six==1.17.0", "six==1.16.0", 1),
        "hash": re.sub(r"sha256:[0-9a-f]", "sha256:x", text, count=1),
        "option": "--index-url https://example.invalid/simple\n" + text,
    }
    for name, variant in variants.items():
        (tmp_path / (name + ".txt")).write_text(variant)
    identity = locks.lock_sha256(path("envs/current-cpu.txt"))
    assert locks.lock_sha256(str(tmp_path / "header.txt")) == identity
    for name in ("pin", "hash", "option"):
        assert locks.lock_sha256(str(tmp_path / (name + ".txt"))) != identity, name
    assert "scripts/lock.py" not in text and "`duel lock`" in text


@pytest.mark.install
def test_a_lock_line_with_a_wrong_hash_is_refused(tmp_path):
    six = [line for line in open(path("envs/current-cpu.txt")) if line.startswith("six==")]
    hashes = locks.read_hashes(path("envs/current-cpu.txt"))["six"]
    good = "six==1.17.0 \\\n" + " \\\n".join("    --hash=sha256:" + h for h in hashes) + "\n"
    bad = "six==1.17.0 --hash=sha256:%s\n" % ("0" * 64)
    assert six
    for name, text, accepted in (("good", good, True), ("bad", bad, False)):
        (tmp_path / (name + ".txt")).write_text(text)
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
             "--require-hashes", "--no-deps", "--target", str(tmp_path / name),
             "-r", str(tmp_path / (name + ".txt"))], capture_output=True, text=True)
        assert (result.returncode == 0) == accepted, result.stdout + result.stderr
        if not accepted:
            assert "DO NOT MATCH THE HASHES" in result.stdout + result.stderr


@pytest.mark.era
def test_the_hf2019_environment_is_exactly_its_lock_and_fills_the_shard_columns():
    lock = eras.lock_file(REPO, "hf2019", "cpu")
    # The workflow's own environment of this lock (built once, shared with the era tests).
    prefix = eras.keyed_prefix(os.path.join(REPO, ".era-envs"), "hf2019", "cpu", lock)
    with open(os.devnull, "w") as log:
        eras.ensure_env("hf2019", lock, prefix, log)  # pip: --no-deps, hashes checked
    python = eras.env_python(prefix)
    assert installed_in(python) == locks.read_pins(lock)
    probe = ("import json; from duel.cell import environment; "
             "print(json.dumps(environment.lock_columns('hf2019', 'cpu', False)))")
    answer = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True,
                            env=dict(os.environ, **PACKAGE_PATH))
    columns = json.loads(answer.stdout)
    assert columns == {"lock_file": "envs/hf2019.txt", "lock_sha256": locks.lock_sha256(lock),
                       "installed_sha256": locks.set_sha256(locks.read_pins(lock)),
                       "lock_match": True, "lock_drift": "", "drift_accepted": False}


@pytest.fixture(scope="module")
def scratch_python(tmp_path_factory):
    """An interpreter that sees .venv's packages (as .venv-slurm does) and six upgraded by hand
    in its own site-packages, ahead of .venv's."""
    root = tmp_path_factory.mktemp("scratch")
    base = subprocess.run([sys.executable, "-c", "import sys; print(sys._base_executable)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([base, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = str(root / "venv" / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    main_site = subprocess.run(
        [sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "zz-main-venv.pth"), "w") as handle:
        handle.write("import site; site.addsitedir(%r)\n" % main_site)
    subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                    "--quiet", "--no-deps", "--target", site, "six==1.16.0"], check=True)
    return python


def scratch_snakemake(python, workdir, *args):
    return subprocess.run([python, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
                           "--directory", str(workdir)] + list(args), cwd=str(workdir),
                          capture_output=True, text=True, timeout=900)


@pytest.mark.workflow
def test_a_hand_upgraded_package_stops_planning_with_its_name_and_both_versions(
        scratch_python, tmp_path):
    assert locks.read_pins(path("envs/current-cpu.txt"))["six"] == "1.17.0"
    result = scratch_snakemake(scratch_python, tmp_path, "-n", "--cores", "1")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "six: lock 1.17.0, installed 1.16.0" in output and "accept_drift" in output, output
    assert "Building DAG" not in output  # stopped before any job was planned


@pytest.mark.workflow
@pytest.mark.framework
def test_accepted_drift_runs_and_every_shard_says_so(scratch_python, tmp_path):
    config = write_config(tmp_path, models_dir=TEST_MODELS, models=["tiny-bert-16pos"],
                          frameworks=["pytorch"], modes={"pytorch": ["eager"]}, batch_sizes=[1],
                          sequence_lengths=[8], method=["duel"], accept_drift=True, **QUICK)
    shard = shard_file(tmp_path, "pytorch", "eager", "tiny-bert-16pos")
    result = scratch_snakemake(scratch_python, tmp_path, os.path.relpath(shard, str(tmp_path)),
                               "--cores", "1", "--configfile", config)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "six: lock 1.17.0, installed 1.16.0" in result.stderr
    lock = path("envs/current-cpu.txt")
    for row in pq.read_table(shard).to_pylist():
        assert row["drift_accepted"] is True and row["lock_file"] == "envs/current-cpu.txt"
        assert row["lock_sha256"] == locks.lock_sha256(lock)
        if row["runner"] == "native":  # the cell ran in the drifted interpreter itself
            assert row["lock_match"] is False and "six 1.17.0 -> 1.16.0" in row["lock_drift"]
            assert row["installed_sha256"] == locks.set_sha256(installed_in(scratch_python))
        else:  # a .venv without its lock's pins is not era current's: a venv built from the lock
            assert row["runner"] == "venv" and row["lock_match"] is True, row["lock_drift"]
            assert row["installed_sha256"] == locks.set_sha256(locks.read_pins(lock))


def uv_here():
    return shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")


@pytest.mark.install
@pytest.mark.skipif(not uv_here(), reason="uv is not installed (scripts/setup.sh installs it)")
def test_regenerating_the_locks_changes_no_pin_and_no_hash(tmp_path):
    """`duel lock`, as documented, keeps every version of the present locks (uv's output
    file is its preference); it asks the package index for the hashes."""
    checkout = copy_checkout(tmp_path)
    result = subprocess.run([sys.executable, "-m", "duel.host.cli", "lock", "--uv", uv_here()],
                            cwd=str(checkout), capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(checkout / "scripts")))
    assert result.returncode == 0, result.stderr[-4000:]
    for lock in INSTALLED:
        regenerated = str(checkout / lock)
        assert locks.read_hashes(regenerated) == locks.read_hashes(path(lock)), lock
        assert locks.read_pins(regenerated) == locks.read_pins(path(lock)), lock
