"""Bases and wheels for builds without a registry, the parts that need no engine.

The stand-in for ``python:3.7`` is laid out from this machine's real Python 3.7 (the one the hf2019
era uses); tests/features/test_docker_hf2019.py builds and runs the image on it.
"""
import hashlib
import os
import subprocess

import pytest

from conftest import DUEL, REPO
from duel.host.stacks import eras, image_build, images, python_base, wheel_cache
from duel.cell import locks

pytestmark = pytest.mark.unit

HF2019_LOCK = os.path.join(REPO, "envs", "hf2019.txt")


def test_official_python_bases_get_the_python_stand_in_and_debian_ones_debootstrap():
    assert python_base.python_version("python:3.7.16-slim-bullseye") == "3.7"
    assert python_base.python_version("python:3.7") == "3.7"
    assert python_base.python_version("python:3.11-slim@sha256:" + "0" * 64) == "3.11"
    for other in ("debian:12.7-slim", "tensorflow/tensorflow:2.0.0-gpu-py3", "pythonista:1"):
        assert python_base.python_version(other) is None
    assert image_build.local_base_suite("python:3.7.16-slim-bullseye") is None


def test_a_base_no_local_build_can_make_is_refused_with_what_to_do():
    result = subprocess.run([*DUEL, "image",
                             "build", "hf2019", "cuda", "--local-base"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "tensorflow/tensorflow:2.0.0-gpu-py3" in result.stderr
    assert "docker load" in result.stderr


def test_the_python_is_laid_out_in_usr_local_as_the_official_images_do(tmp_path):
    found = python_base.describe(eras.find_python("3.7"))
    python_base.install_python(found, str(tmp_path))
    local = tmp_path / "usr" / "local"
    assert os.readlink(str(local / "bin" / "python3")) == "python3.7"
    assert os.path.realpath(str(local / "bin" / "python")) == str(local / "bin" / "python3.7")
    assert (local / "lib" / ("libpython%s.so.1.0" % found["ldversion"])).is_file()
    stdlib = local / "lib" / "python3.7"
    assert (stdlib / "os.py").is_file() and (stdlib / "venv" / "__init__.py").is_file()
    assert list((stdlib / "ensurepip" / "_bundled").glob("pip-*.whl"))  # python3 -m venv needs it
    # what the official images delete, and this machine's own .pth hooks, are not copied
    assert not (stdlib / "test").exists() and not list(stdlib.rglob("*.pyc"))
    assert not list((stdlib / "site-packages").glob("*.pth"))
    assert not list(local.rglob("libpython*.a"))
    # the old prefix is gone from scripts and build configuration
    with open(str(local / "bin" / "pip3")) as handle:
        assert handle.readline().strip() == "#!/usr/local/bin/python3.7"
    (sysconfig_data,) = stdlib.glob("_sysconfigdata_*.py")
    with open(str(sysconfig_data)) as handle:
        text = handle.read()
    assert found["prefix"] not in text and "'prefix': '/usr/local'" in text


def test_the_build_skips_the_registry_only_with_a_wheel_of_every_pin(tmp_path):
    dockerfile = images.dockerfile(REPO, "hf2019", "cpu")
    pins = locks.read_pins(HF2019_LOCK)
    wheels = [str(tmp_path / ("%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version)))
              for name, version in sorted(pins.items())]
    assert image_build.offline_install(dockerfile, HF2019_LOCK, wheels)
    assert not image_build.offline_install(dockerfile, HF2019_LOCK, wheels[1:])
    # a Dockerfile without the ARG asks its registry in any case
    assert not image_build.offline_install(images.dockerfile(REPO, "current", "cpu"), HF2019_LOCK,
                                      wheels)


def test_the_wheel_cache_holds_exactly_the_files_its_lock_allows(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    contents = {"torch-1.3.0-cp37-cp37m-manylinux1_x86_64.whl": "torch",
                "numpy-1.17.3-cp38-cp38-manylinux1_x86_64.whl": "numpy",  # another Python
                "six-1.16.0-py2.py3-none-any.whl": "six",  # another version
                "gast-0.2.2.tar.gz": "gast source",  # published only as source
                "sacremoses-0.0.53-py3-none-any.whl": "built here",  # not the lock's file
                "tokenizers-0.10.3-cp36-abi3-manylinux1_x86_64.whl": "tokenizers",  # stable ABI
                "safetensors-0.4.0-cp38-abi3-manylinux1_x86_64.whl": "safetensors"}  # too new
    for name, text in contents.items():
        (cache / name).write_text(text)
    digest = lambda text: hashlib.sha256(text.encode()).hexdigest()
    lock = tmp_path / "lock.txt"
    lock.write_text("# requires-python: 3.7\n" + "".join(
        "%s \\\n    --hash=sha256:%s\n" % (pin, digest(text)) for pin, text in (
            ("torch==1.3.0", "torch"), ("numpy==1.17.3", "numpy"), ("six==1.17.0", "six"),
            ("gast==0.2.2", "gast source"), ("sacremoses==0.0.53", "sacremoses source"),
            ("tokenizers==0.10.3", "tokenizers"), ("safetensors==0.4.0", "safetensors"))))
    assert wheel_cache.missing_pins(str(lock), str(cache), "cpu") == [
        "numpy==1.17.3", "sacremoses==0.0.53", "safetensors==0.4.0", "six==1.17.0"]
    allowed, stray = wheel_cache.sorted_files(str(lock), str(cache), "cpu")
    assert [os.path.basename(path) for path in allowed] == [
        "gast-0.2.2.tar.gz", "tokenizers-0.10.3-cp36-abi3-manylinux1_x86_64.whl",
        "torch-1.3.0-cp37-cp37m-manylinux1_x86_64.whl"]
    assert [os.path.basename(path) for path in stray] == ["sacremoses-0.0.53-py3-none-any.whl"]


def test_a_distribution_python_is_refused_rather_than_copied_with_its_system(tmp_path):
    system = {"prefix": "/usr", "version": "3.7.3", "ldversion": "3.7m"}
    with pytest.raises(images.ImageError, match="prefix of its own.*DUEL_PYTHON_3_7"):
        python_base.install_python(system, str(tmp_path))
    assert not os.listdir(str(tmp_path))
