"""The check of recorded files (duel/host/plan/references.py) on folders made here: every way a file
can differ from its record, and the work it saves (no hash while a file's time is unchanged).
A real reference truncated under a real run: tests/features/test_faults.py."""
import json
import os

import pytest

from duel.cell import files
from duel.host.plan import references

pytestmark = pytest.mark.unit


def made(folder, manifest_name="reference.json"):
    """A folder with two files and the manifest a job writes for them."""
    os.makedirs(os.path.join(str(folder), "pytorch"))
    with open(os.path.join(str(folder), "pytorch", "model.safetensors"), "wb") as handle:
        handle.write(os.urandom(4096))
    with open(os.path.join(str(folder), "length-8.npy"), "wb") as handle:
        handle.write(b"\x93NUMPY" + bytes(100))
    manifest = os.path.join(str(folder), manifest_name)
    files.write_json(manifest, {"model": "m", "files": files.describe_files(
        str(folder), ["pytorch", "length-8.npy"])})
    return manifest


def test_an_intact_folder_passes_without_hashing_a_file(tmp_path):
    manifest = made(tmp_path)
    hashed = []
    references.check(manifest, sha256=lambda path: hashed.append(path) or "")
    assert hashed == []


def test_a_touched_file_is_hashed_and_passes_while_its_bytes_are_the_same(tmp_path):
    manifest = made(tmp_path)
    os.utime(str(tmp_path / "length-8.npy"), ns=(1, 1))
    hashed = []
    references.check(manifest, sha256=lambda path: hashed.append(path) or files.file_sha256(path))
    assert hashed == [str(tmp_path / "length-8.npy")]


@pytest.mark.parametrize("damage, words", [
    ("truncate", "is 100 bytes, but its job wrote 4096"),
    ("flip", "is changed since its job wrote it (another SHA-256)"),
    ("remove", "is missing"),
])
def test_each_difference_is_one_line_naming_the_file_and_the_fix(tmp_path, damage, words):
    manifest = made(tmp_path)
    weights = str(tmp_path / "pytorch" / "model.safetensors")
    if damage == "truncate":
        os.truncate(weights, 100)
    elif damage == "flip":
        with open(weights, "r+b") as handle:
            first = handle.read(1)
            handle.seek(0)
            handle.write(bytes([first[0] ^ 1]))
    else:
        os.remove(weights)
    with pytest.raises(references.ReferenceMismatch) as error:
        references.check(manifest)
    message = str(error.value)
    assert message.startswith("reference file %s %s: delete %s and run the same command again"
                              % (weights, words, tmp_path)), message
    assert len(message.splitlines()) == 1


def test_a_kept_artifact_is_named_an_artifact(tmp_path):
    folder = tmp_path / "results" / "artifacts" / "current" / "cpu" / "torchscript" / "m"
    manifest = made(folder, "artifacts.json")
    os.truncate(str(folder / "length-8.npy"), 3)
    with pytest.raises(references.ReferenceMismatch, match="^artifact file .*length-8.npy is 3 "):
        references.check(manifest)


def test_no_manifest_and_a_manifest_without_records_pass(tmp_path):
    references.check(str(tmp_path / "reference.json"))  # the job has not run yet
    with open(str(tmp_path / "reference.json"), "w") as handle:
        json.dump({"model": "m", "lengths": [8]}, handle)  # made before files were recorded
    references.check(str(tmp_path / "reference.json"))


def test_a_manifest_that_is_not_json_is_named(tmp_path):
    (tmp_path / "reference.json").write_text("{half")
    with pytest.raises(references.ReferenceMismatch, match="reference.json is not readable JSON"):
        references.check(str(tmp_path / "reference.json"))
