"""Reference files and kept artifacts checked against what their job recorded, before any job.

The reference job (duel/cell/reference.py) and the export of deployment artifacts
(duel/cell/export.py) record each file's size, modification time and SHA-256 in their manifest.
A file that was truncated (a full disk, an interrupted copy) or changed afterwards would make
every point of every cell that reads it an error, and Snakemake deletes a job's old outputs
before the job runs: so the main Snakemake process checks these files while it plans and
refuses, naming the file, before any cell can replace a good shard. The size is always
compared, and the content by its hash wherever the file's modification or change time or
inode differ from those its job recorded (a copy, a touch; once per such file, the match kept in
VERIFIED beside the manifest): a run of many cells costs a few ``stat`` calls per model, and
bytes changed in place are found even where the modification time was set back (the change
time cannot be).
"""
import json
import os

from duel.cell import files
from duel.cell.modes import ARTIFACT_FORMATS


class ReferenceMismatch(ValueError):
    """A reference file is missing or differs from what its job wrote; the message says which."""


VERIFIED = ".verified.json"  # beside a manifest: the files whose hash matched, as they were


def _identity(status):
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]


def check(manifest_path, sha256=files.file_sha256):
    """Raise ReferenceMismatch for the first file of ``manifest_path`` that is missing or differs
    from its record. A manifest without records (made before they were kept) passes as it is."""
    if not os.path.exists(manifest_path):
        return
    folder = os.path.dirname(manifest_path)
    try:
        with open(manifest_path) as handle:
            recorded = json.load(handle).get("files") or {}
    except (ValueError, AttributeError) as error:
        raise ReferenceMismatch(mismatch(manifest_path, folder, "not readable JSON (%s)" % error))
    verified_path = os.path.join(folder, VERIFIED)
    try:
        with open(verified_path) as handle:
            verified = json.load(handle)
    except (OSError, ValueError):
        verified = {}
    checked = {}
    for name in sorted(recorded):
        record, path = recorded[name], os.path.join(folder, name)
        if not os.path.isfile(path):
            raise ReferenceMismatch(mismatch(path, folder, "missing"))
        status = os.stat(path)
        if status.st_size != record["size"]:
            raise ReferenceMismatch(mismatch(
                path, folder, "%d bytes, but its job wrote %d" % (status.st_size,
                                                                            record["size"])))
        identity = _identity(status) + [record["sha256"]]
        as_written = [record["size"], record["mtime_ns"], record.get("ctime_ns"),
                      record.get("inode"), record["sha256"]]
        if identity == as_written:
            continue
        if verified.get(name) != identity:
            if sha256(path) != record["sha256"]:
                raise ReferenceMismatch(mismatch(
                    path, folder, "changed since its job wrote it (another SHA-256)"))
        checked[name] = identity
    if checked and checked != verified:
        try:
            files.write_json(verified_path, checked, sort_keys=True)
        except OSError:  # a read-only copy is checked again next time
            pass


def mismatch(path, folder, problem):
    what = "artifact" if os.path.basename(os.path.dirname(folder)) in ARTIFACT_FORMATS else \
        "reference"
    return ("%s file %s is %s: delete %s and run the same command again (a job that "
            "needs it makes it again, with the same seed: the same weights)"
            % (what, path, problem, folder))
