"""Era environments: lock files, interpreters, real venv builds, and stale builds never reused."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, snakemake
from duel.host.stacks import eras

TINY_LOCK = ("# requires-python: 3.7\n"
             "six==1.16.0 --hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254"
             " --hash=sha256:1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926\n")


@pytest.mark.unit
def test_an_era_not_in_the_registry_is_named_with_the_known_eras():
    with pytest.raises(eras.EraError) as error:
        eras.lock_file(REPO, "hf2020", "cpu")
    message = str(error.value)
    assert "hf2020" in message and "envs/eras.yaml" in message
    assert "hf2019" in message and "current" in message


@pytest.mark.unit
def test_the_lock_files_name_their_interpreter():
    assert eras.required_python(eras.lock_file(REPO, "hf2019", "cpu")) == "3.7"
    assert eras.lock_file(REPO, "current", "cpu").endswith("envs/current-cpu.txt")


@pytest.mark.unit
def test_a_missing_interpreter_says_which_and_how_to_get_it():
    with pytest.raises(eras.EraError) as error:
        eras.find_python("3.99")
    message = str(error.value)
    assert "Python 3.99" in message and "pyenv install 3.99" in message
    assert "DUEL_PYTHON_3_99" in message and "container" in message


@pytest.mark.era
def test_build_reuse_and_rebuild_of_a_real_environment(tmp_path):
    lock = tmp_path / "tiny.txt"
    lock.write_text(TINY_LOCK)
    prefix = str(tmp_path / "env")
    os.makedirs(prefix)
    (tmp_path / "env" / "leftover-from-an-interrupted-build").write_text("")
    assert "partial build" in eras.stale_reason(prefix, str(lock))

    with open(str(tmp_path / "build.log"), "w") as log:
        marker = eras.build_env("tiny", str(lock), prefix, log)
    assert not os.path.exists(os.path.join(prefix, "leftover-from-an-interrupted-build"))
    assert marker["python"].startswith("3.7.") and "six==1.16.0" in marker["packages"]
    assert json.load(open(os.path.join(prefix, eras.MARKER))) == marker
    assert eras.stale_reason(prefix, str(lock)) is None  # reused as it is

    lock.write_text(TINY_LOCK + "# a reworded comment\n")  # the same pins: the same env
    assert eras.stale_reason(prefix, str(lock)) is None
    lock.write_text(TINY_LOCK.replace("six==1.16.0", "six==1.17.0"))
    assert "another version" in eras.discard_if_stale(prefix, str(lock))
    assert not os.path.exists(os.path.join(prefix, eras.MARKER))  # so the rule rebuilds it


ENSURE = ("import sys; from duel.host.stacks import eras; "
          "eras.ensure_env('tiny', sys.argv[1], sys.argv[2], open(sys.argv[3], 'w'))")


@pytest.mark.era
def test_two_runs_needing_one_environment_build_it_once(tmp_path):
    """Two processes (two workflow runs sharing era_envs_dir) ask for the same environment at
    once: one builds it, the other waits for the lock and reuses it; neither removes the other's
    half-built environment."""
    lock = tmp_path / "tiny.txt"
    lock.write_text(TINY_LOCK)
    prefix = str(tmp_path / "envs" / "tiny" / "cpu" / eras.lock_key(str(lock)))
    logs = [str(tmp_path / ("build-%d.log" % number)) for number in (1, 2)]
    racers = [subprocess.Popen([sys.executable, "-c", ENSURE, str(lock), prefix, log])
              for log in logs]
    assert [racer.wait(timeout=600) for racer in racers] == [0, 0]
    texts = [open(log).read() for log in logs]
    assert sum("already built from this lock, reused" in text for text in texts) == 1, texts
    assert sum("-m venv" in text for text in texts) == 1, texts
    assert eras.stale_reason(prefix, str(lock)) is None


@pytest.mark.workflow
def test_planning_refuses_an_era_whose_interpreter_is_missing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "eras=[hf2019]",
                       "era_envs_dir=%s" % (tmp_path / "envs"), check=False, env=environment)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "needs Python 3.7" in output and "pyenv install 3.7" in output
