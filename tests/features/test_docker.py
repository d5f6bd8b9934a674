"""The docker runner for real: a real engine, a locally built image, real cells in containers.

The engine is the one that answers or a private dockerd (tests/docker_engine.py). The image is
built from the project's own containers/current-cpu.Dockerfile by `duel image build`
--local-base, on a Debian base made here with debootstrap (no image registry), with a PyTorch-only
subset of envs/current-cpu.txt (tests/data/envs/current-cpu-pytorch.txt: the same versions,
a third of the size, to keep CI's time). Cells run through the workflow with runner docker.
Nothing is skipped: without an engine these tests fail with the reason.
"""
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

import conftest
from conftest import QUICK, REPO, TEST_MODELS, write_config
from duel.cell.environment import git_commit
from duel.host.plan import layout, planner
from duel.host.stacks import images

pytestmark = pytest.mark.docker

MODEL = "distilbert-base-uncased"
SMALL = "tiny-bert-16pos"  # a two-layer BERT: quick to build, for the fault test
TEST_LOCK = os.path.join(REPO, "tests", "data", "envs", "current-cpu-pytorch.txt")


def shard_file(workdir, framework, mode, model=MODEL):
    return conftest.shard_file(workdir, framework, mode, model)


def cell_log(workdir, framework, mode, model=MODEL):
    cell = planner.Cell("current", "cpu", framework, mode, "fp32", "inference", model, 1)
    return os.path.join(str(workdir), layout.LOG_PATTERN.format(**cell._asdict()))


def snakemake_command(workdir, config, *args):
    """Targets may be among ``args``: they come before --configfile, which takes several files."""
    return [sys.executable, "-m", "snakemake", "-s", os.path.join(REPO, "Snakefile"),
            "--directory", str(workdir), "--cores", "all", *args, "--configfile", config]


def run_snakemake(workdir, config, env, *args, check=True, timeout=900):
    result = subprocess.run(snakemake_command(workdir, config, *args), cwd=str(workdir), env=env,
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError("snakemake failed (%d):\n%s\n%s"
                             % (result.returncode, result.stdout[-3000:], result.stderr[-6000:]))
    return result


def docker(env, *args):
    return subprocess.run(("docker",) + args, env=env, capture_output=True, text=True, timeout=120)


def image_name_for_tests():
    """duel-test/current-cpu-pytorch:<12 hex of the Dockerfile and the subset lock file>."""
    digest = hashlib.sha256()
    for path in (images.dockerfile(REPO, "current", "cpu"), TEST_LOCK):
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return "duel-test/current-cpu-pytorch:" + digest.hexdigest()[:12]


@pytest.fixture(scope="module")
def image(engine, tmp_path_factory):
    """The test image, built unless the engine has it already: (name, ID)."""
    name = image_name_for_tests()
    return conftest.image_built(engine, name, ["current", "cpu", "--local-base", "--lock", TEST_LOCK, "--name", name],
                                tmp_path_factory.mktemp("build"), 1200)


def models_folder(workdir):
    folder = os.path.join(str(workdir), "models")
    os.makedirs(folder)
    for source in (os.path.join(REPO, "config", "models", MODEL + ".json"),
                   os.path.join(TEST_MODELS, SMALL + ".json")):
        with open(source) as handle, open(os.path.join(folder, os.path.basename(source)),
                                          "w") as target:
            target.write(handle.read())
    return folder


def docker_config(workdir, model=MODEL, **values):
    settings = dict(runner="docker", images={"current-cpu": image_name_for_tests()},
                    models_dir=models_folder(workdir), models=[model], frameworks=["pytorch"],
                    batch_sizes=[1], sequence_lengths=[8], method="duel", **QUICK)
    settings.update(values)
    return write_config(workdir, **settings)


def test_a_cell_runs_in_the_image_and_its_shard_says_so(tmp_path, engine, image):
    name, image_id = image
    config = docker_config(tmp_path, modes={"pytorch": ["eager"]})
    run_snakemake(tmp_path, config, engine.env)
    (row,) = pq.read_table(shard_file(tmp_path, "pytorch", "eager")).to_pylist()
    assert row["status"] == "ok", row["message"]
    assert row["runner"] == "docker" and row["image"] == name
    assert row["image_digest"] == image_id  # the ID the engine reports for the image run
    assert row["framework_version"] == "2.13.0+cpu" and row["transformers_version"] == "4.57.6"
    inside = docker(engine.env, "run", "--rm", "--network", "none", image_id, "python", "-c",
                    "import platform; print(platform.python_version())")
    assert inside.returncode == 0, inside.stderr
    assert row["python"] == inside.stdout.strip() != "%d.%d.%d" % sys.version_info[:3]
    assert row["hostname"] != socket.gethostname()  # the container's, not this machine's
    assert row["git_commit"] == git_commit()  # handed in: the image has no git
    assert row["max_abs_diff"] is not None  # the reference (made in the image too) was used
    assert os.stat(shard_file(tmp_path, "pytorch", "eager")).st_uid == os.getuid()
    reference_log = os.path.join(str(tmp_path), "results", "logs", "reference", "current",
                                 MODEL + "-reference.log")
    with open(reference_log) as handle:
        assert "image %s (%s)" % (name, image_id) in handle.read()
    assert os.path.exists(os.path.join(str(tmp_path), "results", "summary.xlsx"))


def test_a_missing_image_is_refused_before_any_job(tmp_path, engine):
    config = docker_config(tmp_path, modes={"pytorch": ["eager"]},
                           images={"current-cpu": "duel/not-built:0"})
    result = run_snakemake(tmp_path, config, engine.env, "-n", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "duel/not-built:0" in output and "is not in the Docker engine" in output, output
    assert not os.path.exists(str(tmp_path / "results"))


def test_an_engine_that_does_not_answer_is_refused_before_any_job(tmp_path):
    config = docker_config(tmp_path, modes={"pytorch": ["eager"]})
    env = dict(os.environ, DOCKER_HOST="unix://%s" % (tmp_path / "no-engine.sock"))
    result = run_snakemake(tmp_path, config, env, "-n", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "runner docker needs a running Docker engine" in output, output
    assert "no-engine.sock" in output
    assert not os.path.exists(str(tmp_path / "results"))


def running_container(engine, log_path):
    """The container a cell's log names (run_in_docker writes it first), if it runs now."""
    if not os.path.exists(log_path):
        return None
    with open(log_path) as handle:
        words = handle.read().split()
    if "container" not in words:
        return None
    name = words[words.index("container") + 1]
    state = docker(engine.env, "inspect", "--format", "{{.State.Running}}", name)
    return name if state.stdout.strip() == "true" else None


def test_a_container_killed_mid_cell_fails_its_job_keeps_the_others_and_resumes(
        tmp_path, engine, image):
    """Two cells (PyTorch eager and TorchScript); the container of the second to run is killed."""
    config = docker_config(tmp_path, SMALL, modes={"pytorch": ["eager", "torchscript"]})
    cells = [(shard_file(tmp_path, "pytorch", mode, SMALL),
              cell_log(tmp_path, "pytorch", mode, SMALL)) for mode in ("eager", "torchscript")]
    targets = [os.path.relpath(shard, str(tmp_path)) for shard, _ in cells]  # no merge needed
    with open(str(tmp_path / "first-run.log"), "w") as log:
        process = subprocess.Popen(snakemake_command(tmp_path, config, *targets),
                                   cwd=str(tmp_path), env=engine.env, stdout=log, stderr=log,
                                   start_new_session=True)
    try:
        victim, deadline = None, time.time() + 600
        while victim is None and time.time() < deadline and process.poll() is None:
            done = [cell for cell in cells if os.path.exists(cell[0])]
            if len(done) == 1:
                (other,) = [cell for cell in cells if cell not in done]
                container = running_container(engine, other[1])
                if container:
                    victim, kept_shard = (container, other), done[0][0]
            time.sleep(0.5)
        assert victim, "the second cell's container never ran"
        time.sleep(0.5)  # mid-cell: the cell is importing torch or building the model
        assert docker(engine.env, "kill", victim[0]).returncode == 0
        assert process.wait(timeout=300) != 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    (killed_shard, killed_log) = victim[1]
    assert os.path.exists(kept_shard) and not os.path.exists(killed_shard)
    with open(killed_log) as handle:
        assert "ended with status 137: the container was killed" in handle.read()
    with open(str(tmp_path / "first-run.log")) as handle:
        assert "Error in rule run_cell" in handle.read()
    assert running_container(engine, killed_log) is None
    kept = os.stat(kept_shard).st_mtime_ns

    result = run_snakemake(tmp_path, config, engine.env, "--rerun-incomplete", *targets)
    assert os.stat(kept_shard).st_mtime_ns == kept, result.stderr[-3000:]
    (row,) = pq.read_table(killed_shard).to_pylist()
    assert row["status"] == "ok" and row["runner"] == "docker", row["message"]
    assert row["image_digest"] == image[1]
