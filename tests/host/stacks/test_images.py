"""Image definitions agree with envs/, lint clean; runner pieces that need no engine.

The real engine runs in tests/features/test_docker.py. Apptainer cannot be installed on these
machines, so its definition files are checked against the Dockerfiles line by line, and the
apptainer runner's wiring (Snakemake's container: directive, the recorded image and digest) is run
with a stand-in `apptainer` that records its call and runs the command on the host.
"""
import os
import re
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import QUICK, REPO, TEST_MODELS, shard_file, snakemake, write_config
from duel.cell import conditions, locks
from duel.host.cli import main
from duel.host.stacks import docker_run, eras, image_build, images

ERAS_DEVICES = [(era, device) for era in ("current", "hf2019") for device in ("cpu", "cuda")]
# The Python each image runs, which its lock file must be resolved for: what the base ships
# (Debian bookworm 3.11, python:3.7), or what the Dockerfile adds (Ubuntu 18.04's python3.7 in
# TensorFlow's 2019 image, whose own Python is 3.6).
IMAGE_PYTHON = {
    "debian:12.7-slim": ((3, 11), "python3 -m venv"),
    "python:3.7.16-slim-bullseye": ((3, 7), "python3 -m venv"),
    "tensorflow/tensorflow:2.0.0-gpu-py3": ((3, 7), "python3.7 -m venv"),
}
# The software a cell measures: the same release in every image of an era.
MEASURED = ("torch", "tensorflow", "transformers", "numpy", "protobuf", "pyarrow", "h5py")


def read(path):
    with open(path) as handle:
        return handle.read()


def lock_path(era, device):
    return os.path.join(REPO, images.lock_of(images.dockerfile(REPO, era, device)))


def dockerfile_commands(text):
    """The shell commands of every RUN, continuation lines joined, split at &&."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        if line.startswith("RUN "):
            commands += [" ".join(part.split()) for part in line[4:].split("&&")]
    return commands


def definition_sections(text):
    sections, current = {}, "header"
    for line in text.splitlines():
        if line.startswith("%"):
            current = line.strip()
            sections[current] = []
        elif not line.strip().startswith("#") and line.strip():
            sections.setdefault(current, []).append(line.rstrip())
    return sections


def post_commands(lines):
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    skip = ("set -eu", "export DEBIAN_FRONTEND=noninteractive")
    return [" ".join(line.split()) for line in joined.splitlines() if line.strip() not in skip]


@pytest.mark.unit
def test_every_dockerfile_is_hadolint_clean():
    paths = sorted(os.path.join(REPO, "containers", name)
                   for name in os.listdir(os.path.join(REPO, "containers"))
                   if name.endswith("Dockerfile"))
    assert len(paths) == 4
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or "hadolint"
    config = os.path.join(REPO, "containers", ".hadolint.yaml")
    result = subprocess.run([hadolint, "--config", config] + paths, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.unit
@pytest.mark.parametrize("era, device", ERAS_DEVICES)
def test_each_image_installs_its_era_lock_file_on_a_pinned_base(era, device):
    path = images.dockerfile(REPO, era, device)
    lock = lock_path(era, device)
    assert lock == eras.lock_file(REPO, era, device)  # the file the workflow uses for this era
    base = images.base_of(path)
    name, _, tag = base.split("@")[0].rpartition(":")
    assert name and "/" not in tag and tag not in ("", "latest"), base
    if "@" in base:
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", base.split("@", 1)[1]), base
    python, venv = IMAGE_PYTHON[base]
    assert python == images.python_of(lock)
    assert any(command.startswith(venv + " /opt/duel") for command in dockerfile_commands(read(path)))
    assert locks.read_pins(lock) and all(locks.read_hashes(lock).values())  # every pin hashed
    text = read(path)
    assert "FROM ${BASE}" in text
    for command in dockerfile_commands(text):  # pip installs the lock file (and a pinned pip)
        if " pip install " in command:
            assert re.search(r"(-r /opt/duel/lock.txt| pip==[0-9.]+)$", command), command
            if command.endswith("-r /opt/duel/lock.txt"):  # exactly the lock, hashes checked
                assert "--no-deps" in command.split(), command


@pytest.mark.unit
@pytest.mark.parametrize("era, device", ERAS_DEVICES)
def test_each_apptainer_definition_matches_its_dockerfile(era, device):
    dockerfile = images.dockerfile(REPO, era, device)
    sections = definition_sections(read(images.definition(REPO, era, device)))
    header = dict(line.split(":", 1) for line in sections["header"])
    assert header["Bootstrap"].strip() == "docker"
    assert header["From"].strip() == images.base_of(dockerfile)
    files = [line.split() for line in sections["%files"]]
    assert [images.lock_of(dockerfile), "/opt/duel/lock.txt"] in files
    assert ["build", "/tmp/duel-build"] in files
    assert post_commands(sections["%post"]) == dockerfile_commands(read(dockerfile))
    assert "export PATH=/opt/duel/bin:$PATH" in [line.strip() for line in sections["%environment"]]


def versions(path):
    """{name: version} of a lock file, without local labels (torch's +cpu is the CPU build of
    the same release)."""
    return dict((name, version.split("+")[0])
                for name, version in locks.read_pins(path).items())


@pytest.mark.unit
def test_images_of_one_era_measure_the_same_releases():
    cpu, cuda = versions(lock_path("current", "cpu")), versions(lock_path("current", "cuda"))
    assert cpu.items() <= cuda.items()  # the CUDA lock file is complete: a superset
    cpu, cuda = versions(lock_path("hf2019", "cpu")), versions(lock_path("hf2019", "cuda"))
    cuda["tensorflow"] = cuda.pop("tensorflow-gpu")  # TF 2.0's GPU build has its own name
    for package in MEASURED:
        assert cpu[package] == cuda[package], package
    subset = os.path.join(REPO, "tests", "data", "envs", "current-cpu-pytorch.txt")
    assert locks.read_pins(subset).items() <= locks.read_pins(lock_path("current", "cpu")).items()
    hashes = locks.read_hashes(subset)
    assert all(hashes.values())
    assert hashes.items() <= locks.read_hashes(lock_path("current", "cpu")).items()


@pytest.mark.unit
def test_the_default_image_name_follows_the_dockerfile_and_lock_file(tmp_path):
    for folder in ("containers", "envs"):
        shutil.copytree(os.path.join(REPO, folder), str(tmp_path / folder))
    before = images.default_image(str(tmp_path), "current", "cpu", "docker")
    assert re.fullmatch(r"duel/current-cpu:[0-9a-f]{12}", before)
    assert before == images.default_image(REPO, "current", "cpu", "docker")
    with open(str(tmp_path / "envs" / "current-cpu.txt"), "a") as lock:
        lock.write("six==1.17.0\n")
    assert images.default_image(str(tmp_path), "current", "cpu", "docker") != before
    sif = images.default_image(str(tmp_path), "current", "cpu", "apptainer")
    assert sif.startswith(str(tmp_path / "containers" / "sif" / "current-cpu-")) and sif.endswith(
        ".sif")
    chosen = {"images": {"current-cpu": "registry.example:5000/duel/cpu:1"}}
    assert images.image_for(chosen, REPO, "current", "cpu", "docker") == chosen["images"][
        "current-cpu"]


@pytest.mark.unit
def test_wheels_from_this_disk_are_taken_only_for_pinned_versions_and_the_image_python(tmp_path):
    for name in ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                 "transformers-4.57.6-py3-none-any.whl", "six-1.16.0-py2.py3-none-any.whl"):
        (tmp_path / name).write_text("")
    (tmp_path / "torch-2.13.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl").write_text("")
    found = image_build.local_wheels(lock_path("current", "cpu"), [str(tmp_path)], (3, 11), "cpu")
    assert sorted(os.path.basename(path) for path in found) == [
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "transformers-4.57.6-py3-none-any.whl"]
    found = image_build.local_wheels(lock_path("current", "cuda"), [str(tmp_path)], (3, 11), "cuda")
    assert "torch-2.13.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl" in [
        os.path.basename(path) for path in found]
    assert not [path for path in found if "+cpu" in path]


@pytest.mark.unit
def test_docker_run_mounts_the_workdir_read_write_and_the_rest_read_only(tmp_path):
    checkout, work, models = tmp_path / "checkout", tmp_path / "work", tmp_path / "models"
    for folder in (checkout, work, models, checkout / "results"):
        folder.mkdir()
    options = docker_run.mounts(str(work), [str(checkout), str(models)])
    assert options == ["--volume", "%s:%s:rw" % (work, work), "--volume",
                       "%s:%s:ro" % (checkout, checkout), "--volume", "%s:%s:ro" % (models, models)]
    inside = docker_run.mounts(str(checkout), [str(checkout), str(checkout / "results")])
    assert inside == ["--volume", "%s:%s:rw" % (checkout, checkout)]  # run in the checkout
    args = main.parser("image").parse_args([
        "image", "run", "--image", "duel/x:1", "--device", "cuda", "--threads", "3", "--checkout",
        str(checkout), "--record-image", "--", "python", "run_cell.py", "--output", "a b.parquet"])
    args.check(args.parser, args)  # as duel's main does before running it
    command = docker_run.docker_run_command(args, "sha256:abc", "duel-n", str(work), "c0ffee")
    assert command[:3] == ["docker", "run", "--rm"]
    cpuset = conditions.describe_cpus(conditions.pinned_cpus(3))  # the cores a native cell takes
    for option in (["--network", "none"], ["--cpuset-cpus", cpuset], ["--gpus", "all"],
                   ["--user", "%d:%d" % (os.getuid(), os.getgid())], ["--workdir", str(work)]):
        assert " ".join(option) in " ".join(command), option
    assert "DUEL_GIT_COMMIT=c0ffee" in command
    assert command[-9:] == ["sha256:abc", "python", "run_cell.py", "--output", "a b.parquet",
                            "--image", "duel/x:1", "--image-digest", "sha256:abc"]
    args.device = "cpu"
    assert "--gpus" not in docker_run.docker_run_command(args, "sha256:abc", "n", str(work), "")


@pytest.mark.workflow
def test_runner_apptainer_without_sdm_apptainer_is_refused(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "runner=apptainer", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "--sdm apptainer" in output, output[-3000:]
    assert not os.path.exists(str(tmp_path / "results"))


STAND_IN = """#!/bin/sh
# A stand-in for apptainer (which cannot be installed here): records the call, then runs the
# command after the image on this host, as `apptainer exec IMAGE sh -c CMD` would inside.
echo "$@" >> "{record}"
if [ "$1" = "--version" ]; then echo "apptainer version 1.3.4"; exit 0; fi
while [ "$#" -gt 0 ] && [ "$1" != "{image}" ]; do shift; done
shift
exec "$@"
"""


@pytest.mark.workflow
def test_runner_apptainer_puts_the_image_in_the_container_directive_and_the_shard(tmp_path):
    sif = tmp_path / "current-cpu-test.sif"
    sif.write_bytes(b"not really an image, but a file with a digest")
    record, bin_dir = tmp_path / "apptainer-calls.txt", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apptainer").write_text(STAND_IN.format(record=record, image=sif))
    (bin_dir / "apptainer").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s:%s" % (bin_dir, os.path.dirname(sys.executable),
                                              os.environ["PATH"]))
    config = write_config(tmp_path, runner="apptainer", images={"current-cpu": str(sif)},
                          models_dir=TEST_MODELS, models=["tiny-bert-16pos"],
                          frameworks=["pytorch"], modes={"pytorch": ["eager"]}, batch_sizes=[1],
                          sequence_lengths=[8], method="duel", **QUICK)
    snakemake(tmp_path, "--cores", "1", "--sdm", "apptainer", "--apptainer-args=--nv",
              "--configfile", config, env=env)
    calls = read(str(record)).splitlines()
    execs = [call for call in calls if " exec " in " %s " % call]
    assert len(execs) == 2  # make_reference and run_cell, not the merge
    assert all(str(sif) in call and "--nv" in call for call in execs)
    assert any("duel.cell.commands.make_reference" in call for call in execs)
    (row,) = pq.read_table(shard_file(tmp_path, "pytorch", "eager", "tiny-bert-16pos")
                           ).to_pylist()
    assert row["status"] == "ok" and row["runner"] == "apptainer"
    assert row["image"] == str(sif) and row["image_digest"] == images.file_digest(str(sif))


@pytest.mark.workflow
def test_runner_apptainer_refuses_a_missing_image_file(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--sdm", "apptainer", "--config",
                       "runner=apptainer", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "containers/sif/current-cpu-" in output and "--engine apptainer" in output
