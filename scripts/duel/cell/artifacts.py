"""What an export left in its folder, as the deployment modes and the planner read it: the
manifest (``artifacts.json``) and the artifact that serves a point.

Kept apart from export.py, which writes them and needs the adapters: a reader of artifacts
imports no framework adapter.
"""
import json
import os

MANIFEST = "artifacts.json"
ALL_SHAPES = "all"  # the key of a format's one artifact for every shape


def shape_key(batch_size, seq_len):
    return "%dx%d" % (batch_size, seq_len)


def read_manifest(folder):
    with open(os.path.join(folder, MANIFEST)) as handle:
        return json.load(handle)


def artifact_for(manifest, folder, batch_size, seq_len):
    """(status, path or message, entry) of the artifact that serves one point."""
    if manifest.get("skipped"):
        return "skipped", manifest["skipped"], {}
    if manifest.get("error"):
        return "error", manifest["error"], {}
    artifacts = manifest["artifacts"]
    entry = artifacts.get(ALL_SHAPES) or artifacts.get(shape_key(batch_size, seq_len))
    if entry is None:
        return "error", "no artifact was exported for %s" % shape_key(batch_size, seq_len), {}
    if entry["status"] != "ok":
        return entry["status"], entry["message"], entry
    return "ok", os.path.join(folder, entry["path"]), entry
