"""An era from a date (duel lock --as-of, duel/host/stacks/as_of.py): the packages as the index
stood that day, for the newest Python at hand with wheels of them, into a hashed lock and an
entry of envs/eras.yaml. The resolutions ask the real package index; nothing is installed."""
import os
import shutil
import subprocess

import pytest

from conftest import DUEL, REPO
from duel.cell import locks
from duel.host.stacks import as_of, eras, pip_sources
from test_eras import holds_to_its_files

UV = os.path.join(REPO, ".venv", "bin", "uv")


def resolve(date, lines, pythons=as_of.PYTHONS):
    options, environment = pip_sources.uv_options(pip_sources.pip_settings())
    return as_of.resolve(UV, dict(os.environ, **environment), options, date, lines, pythons)


@pytest.mark.install
def test_a_small_package_set_resolves_as_the_index_stood_that_day():
    python, text = resolve("2019-10-15", ["six", "packaging"])
    assert python == "3.11"  # pure-Python wheels: the newest Python at hand takes them
    # six 1.13.0 came on 2019-11-05, packaging 19.2 on 2019-09-18
    assert as_of.versions(text) == {"six": "1.12.0", "packaging": "19.2", "pyparsing": "2.4.2"}


@pytest.mark.install
def test_the_frameworks_of_a_date_make_an_era_the_registry_holds(tmp_path):
    os.makedirs(str(tmp_path / "envs"))
    shutil.copy(os.path.join(REPO, "envs", "eras.yaml"), str(tmp_path / "envs"))
    lines = as_of.requirements()
    python, resolved = resolve("2021-06-01", lines)
    assert python == "3.7"  # no torch or TensorFlow wheel for Python 3.11 in June 2021
    found = as_of.versions(resolved)
    assert (found["torch"], found["tensorflow"], found["transformers"]) == \
        ("1.8.1", "2.5.0", "4.6.1")
    text = as_of.lock_text("asof-2021-06", "2021-06-01", python, lines, resolved)
    lock = as_of.write_era(str(tmp_path), "asof-2021-06", "2021-06-01", python, text)
    assert locks.read_pins(lock) == found and set(locks.read_hashes(lock)) == set(found)
    registry = eras.registry(str(tmp_path))
    assert list(registry) == ["hf2019", "hf2021", "asof-2021-06", "hf2023", "current"]
    era = registry["asof-2021-06"]
    assert holds_to_its_files(era, str(tmp_path)) == {"envs/asof-2021-06.txt"}
    assert era.label == "torch 1.8.1, TensorFlow 2.5.0, transformers 4.6.1 (as of 2021-06-01)"
    with pytest.raises(as_of.AsOfError, match="'asof-2021-06' is in envs/eras.yaml already"):
        as_of.write_era(str(tmp_path), "asof-2021-06", "2021-06-01", python, text)
    # A pin holds one package at its release; the rest stay as of the date.
    python, pinned = resolve("2021-06-01", as_of.requirements(["tensorflow==2.4.1"]), ("3.7",))
    assert as_of.versions(pinned)["tensorflow"] == "2.4.1"
    assert as_of.versions(pinned)["torch"] == "1.8.1"


@pytest.mark.install
def test_a_date_no_python_at_hand_had_wheels_for_is_refused_with_each_reason():
    with pytest.raises(as_of.AsOfError) as refused:
        resolve("2015-06-01", ["tensorflow"])  # TensorFlow's first wheels came that November
    message = str(refused.value)
    assert message.startswith("no Python at hand resolves tensorflow as of 2015-06-01 (")
    assert all("Python %s: " % python in message for python in as_of.PYTHONS)


@pytest.mark.unit
def test_bad_dates_and_pins_are_refused_in_one_line():
    for text in ("2021-13-01", "01-06-2021", "2999-01-01", "yesterday"):
        with pytest.raises(as_of.AsOfError, match="is not a past date as YYYY-MM-DD"):
            as_of.check_date(text)
    assert as_of.check_date("2021-06-01") == "2021-06-01"
    assert as_of.requirements(["TensorFlow==2.5.0", "keras==2.4.3"]) == [
        "torch", "TensorFlow==2.5.0", "transformers", "numpy", "pyarrow", "keras==2.4.3"]
    for pin in ("tensorflow", "tensorflow==2.5; rm -rf /", "==2.5"):
        with pytest.raises(as_of.AsOfError, match="is not NAME==VERSION"):
            as_of.requirements([pin])


@pytest.mark.unit
def test_era_and_pin_without_a_date_are_refused():
    result = subprocess.run(DUEL + ["lock", "--era", "x"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().endswith("--era and --pin go with --as-of DATE")
