"""The 2019 image for real: hf2019-cpu built here without a registry, a 2019 cell run inside it.

The image is the workflow's own ``duel/hf2019-cpu:<tag>``, from containers/hf2019-cpu.Dockerfile
and the whole of envs/hf2019.txt, built by `duel image build` --local-base on the stand-in
for ``python:3.7.16-slim-bullseye`` (Debian bookworm and this machine's Python 3.7 in /usr/local:
stacks/python_base.py), with its wheels from a cache outside the checkout that the first build
fills (DUEL_TEST_WHEELS, default ~/.cache/duel-tests/wheels). The engine is the Docker tests'
(tests/docker_engine.py), whose data root keeps the image for later runs. Then a PyTorch and a
TensorFlow cell of era hf2019 run through the workflow with runner docker.
"""
import os

import pyarrow.parquet as pq
import pytest
from packaging.utils import canonicalize_name

import conftest
from conftest import QUICK, REPO, TEST_MODELS, write_config
from duel.cell import locks
from duel.host.stacks import images
from test_docker import docker, run_snakemake

pytestmark = [pytest.mark.docker, pytest.mark.era]

MODEL = "tiny-bert-16pos"
WHEELS = os.path.join(os.environ.get("DUEL_TEST_WHEELS",
                                     os.path.expanduser("~/.cache/duel-tests/wheels")), "hf2019")
CELLS = (("pytorch", "eager", "1.3.0"), ("tensorflow", "function", "2.0.0"))


@pytest.fixture(scope="module")
def image(engine, tmp_path_factory):
    """The workflow's hf2019-cpu image, built unless the engine has it already: (name, ID)."""
    name = images.default_image(REPO, "hf2019", "cpu", "docker")
    return conftest.image_built(engine, name, ["hf2019", "cpu", "--local-base", "--wheel-cache", WHEELS],
                                tmp_path_factory.mktemp("build"), 1800)


def in_image(engine, image_id, *command):
    result = docker(engine.env, "run", "--rm", "--network", "none", image_id, *command)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_the_2019_image_has_python_3_7_in_usr_local_and_exactly_its_lock_file(engine, image):
    _, image_id = image
    facts = in_image(engine, image_id, "python", "-c",
                     "import platform, sys; print(platform.python_version(), sys.executable, "
                     "sys.base_prefix)").split()
    assert facts[0].startswith("3.7.") and facts[1:] == ["/opt/duel/bin/python", "/usr/local"]
    # the base's Python has the system libraries of its extension modules
    in_image(engine, image_id, "/usr/local/bin/python3", "-c",
             "import ssl, sqlite3, ctypes, readline, bz2, lzma, uuid; "
             "assert ssl.OPENSSL_VERSION.startswith('OpenSSL 3')")
    freeze = in_image(engine, image_id, "cat", "/opt/duel/pip-freeze.txt").splitlines()
    installed = {canonicalize_name(project): version
                 for project, version in (line.split("==") for line in freeze)}
    pins = locks.read_pins(os.path.join(REPO, "envs", "hf2019.txt"))
    # pip freeze leaves out pip's own build tools; everything else is the lock, exactly
    assert set(pins) - set(installed) == {"setuptools", "wheel"}
    assert installed == {name: pins[name] for name in installed}


def test_a_2019_cell_runs_in_the_2019_image_and_matches_its_reference(tmp_path, engine, image):
    name, image_id = image
    config = write_config(tmp_path, runner="docker", eras=["hf2019"], models_dir=TEST_MODELS,
                          models=[MODEL], frameworks=["pytorch", "tensorflow"],
                          modes={"pytorch": ["eager"], "tensorflow": ["function"]},
                          batch_sizes=[1], sequence_lengths=[8], method="timeit", **QUICK)
    run_snakemake(tmp_path, config, engine.env)
    python = in_image(engine, image_id, "python", "-c",
                      "import platform; print(platform.python_version())")
    for framework, mode, version in CELLS:
        path = conftest.shard_file(tmp_path, framework, mode, MODEL, era="hf2019")
        (row,) = pq.read_table(path).to_pylist()
        assert row["status"] == "ok", row["message"]
        assert row["era"] == "hf2019" and row["method"] == "timeit"
        assert row["python"] == python and python.startswith("3.7.")
        assert row["framework_version"] == version and row["transformers_version"] == "2.1.1"
        assert row["runner"] == "docker" and row["image"] == name
        assert row["image_digest"] == image_id
        # checked against the PyTorch eager reference, made in the same image
        assert row["max_abs_diff"] is not None
        assert row["max_abs_diff"] <= row["diff_tolerance"]
    reference_log = os.path.join(str(tmp_path), "results", "logs", "reference", "hf2019",
                                 MODEL + "-reference.log")
    with open(reference_log) as handle:
        assert "image %s (%s)" % (name, image_id) in handle.read()
