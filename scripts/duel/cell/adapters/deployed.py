"""The deployment modes: one exported artifact, run two ways (in Python, and in C/C++).

| mode       | framework  | artifact (export.py)           | runs in                               |
|------------|------------|--------------------------------|---------------------------------------|
| ``jitpy``  | pytorch    | TorchScript file per shape     | this Python process, torch.jit.load   |
| ``jitcpp`` | pytorch    | the same files                 | cpp/ libtorch runner, no Python    |
| ``savedpy``| tensorflow | one SavedModel, [None, None]   | this Python process, tf.saved_model.load |
| ``savedcpp``| tensorflow| the same SavedModel            | cpp/ TensorFlow C API runner       |

The Python modes are deployed_python.py, the C/C++ ones deployed_cpp.py. Both record per point
what a deployment pays besides the call: ``artifact_bytes`` (size on disk), ``export_s`` (the
export of that artifact), ``artifact_load_ms`` (the load call alone), ``load_ms`` (cold start:
C/C++, from the runner's process start to its first output; Python, from the load call to the
first output, in an interpreter that already imported the framework) and ``runtime`` /
``runtime_version``. Only fp32 inference with the duel method: an artifact is exported in
fp32, and the C/C++ runners implement the duel method only.
"""
import os

from .. import artifacts, modes

# mode name -> its registry entry (modes.py), deployed modes only
MODES = {mode.name: mode for mode in modes.MODES if mode.kind in modes.DEPLOYED}


def is_deployed(mode):
    return mode in MODES


def artifact_format(mode):
    return MODES[mode].artifact_format


def runs_in_cpp(mode):
    return mode in MODES and MODES[mode].kind == modes.DEPLOYED_CPP


class Deployment(object):
    """What a deployment mode shares between Python and C/C++: the artifacts, its limits."""

    def __init__(self):
        self.artifact_dir = None
        self.manifest = None
        self.runner = None
        self.entry = {}

    def attach(self, artifact_dir, runner=None):
        """The folder export.py wrote (its manifest read now) and, for C/C++, the runner."""
        self.artifact_dir = artifact_dir
        self.manifest = artifacts.read_manifest(artifact_dir)
        self.runner = runner

    def deployment_unsupported(self, task, precision):
        if task != "inference":
            return "the deployment modes time inference only (an exported graph is not trained)"
        if precision != "fp32":
            return "the deployment modes export and run fp32 artifacts only"
        if self.manifest is None:
            return None
        return self.manifest.get("skipped")

    def artifact(self, batch_size, seq_len):
        """The path of the artifact serving a point; raises with the export's message where
        there is none (the row then says why)."""
        status, where, entry = artifacts.artifact_for(self.manifest, self.artifact_dir,
                                                      batch_size, seq_len)
        if status != "ok":
            raise RuntimeError(where)
        if not os.path.exists(where):
            raise RuntimeError("artifact %s is gone (removed before its cell ran?)" % where)
        self.entry = entry
        return where

    def artifact_columns(self):
        return {"artifact_bytes": self.entry.get("bytes"), "export_s": self.entry.get("export_s")}
