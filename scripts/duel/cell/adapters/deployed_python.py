"""Deployment modes in Python: the exported artifact loaded back into this process.

- ``jitpy``: the point's TorchScript file, ``torch.jit.load`` (on the cell's device), called
  under ``torch.no_grad()`` like the ``torchscript`` mode; the file is the very one ``jitcpp``
  runs in C++, so the two modes differ only in what runs around the graph.
- ``savedpy``: the SavedModel, ``tf.saved_model.load``, its ``serving_default`` signature
  called with the point's int32 ids; the SavedModel is the very one ``savedcpp`` runs.

The artifact is loaded per point (a fresh load, as each C/C++ runner process does), timed as
``artifact_load_ms`` and ``setup_s``; nothing of the model is built from the weights here.
"""
import time

import numpy as np

from ..modes import DEPLOYED_PYTHON, mode_names
from .deployed import Deployment


def _loaded_columns(adapter, columns):
    first_call_ms = columns.get("first_call_ms")
    load_ms = None if first_call_ms is None else adapter.load_ms + first_call_ms
    result = adapter.deployment.artifact_columns()
    result.update(artifact_load_ms=adapter.load_ms, load_ms=load_ms,
                  runtime=adapter.runtime_name, runtime_version=adapter.runtime_version())
    return result


def _deployed(base):
    """The Python deployment adapter on top of ``base`` (a framework adapter class)."""

    class DeployedPython(base):
        def __init__(self, mode, device, precision, threads, task="inference", tf32=False):
            super(DeployedPython, self).__init__(mode, device, precision, threads, task, tf32)
            self.deployment = Deployment()
            self.load_ms = None

        def attach(self, artifact_dir, runner=None):
            self.deployment.attach(artifact_dir)

        def mode_unsupported(self, spec):
            return self.deployment.deployment_unsupported(self.task, self.precision)

        def build(self, spec, seed, weights_dir=None):
            self.require_device()  # the artifact holds the weights
            self.fresh = True

        def point_columns(self, columns):
            return _loaded_columns(self, columns)

    return DeployedPython


def _pytorch():
    import torch

    from .pytorch import PyTorchAdapter

    class JitPythonAdapter(_deployed(PyTorchAdapter)):
        modes = mode_names("pytorch", (DEPLOYED_PYTHON,))
        runtime_name = "torch.jit (Python)"

        def runtime_version(self):
            return torch.__version__

        def call_for(self, method, inputs):
            path = self.deployment.artifact(*inputs.shape)
            began = time.perf_counter()
            module = torch.jit.load(path, map_location=torch.device(self.device))
            self.load_ms = (time.perf_counter() - began) * 1000.0
            return lambda: module(inputs)

    return JitPythonAdapter


def _tensorflow():
    import tensorflow as tf

    from .tensorflow import TensorFlowAdapter

    class SavedPythonAdapter(_deployed(TensorFlowAdapter)):
        modes = mode_names("tensorflow", (DEPLOYED_PYTHON,))
        runtime_name = "tf.saved_model (Python)"

        def runtime_version(self):
            return tf.__version__

        def call_for(self, method, inputs):
            path = self.deployment.artifact(*np.shape(inputs))
            began = time.perf_counter()
            loaded = tf.saved_model.load(path)
            serve = loaded.signatures["serving_default"]
            self.load_ms = (time.perf_counter() - began) * 1000.0
            self._loaded = loaded  # the signature's variables live as long as the object
            return self._device_call(lambda: serve(input_ids=inputs)["last_hidden_state"])

        def last_hidden_state(self, outputs):
            return outputs

        def release_point(self):
            self._loaded = None
            super(SavedPythonAdapter, self).release_point()

    return SavedPythonAdapter


def adapter_class(framework):
    return {"pytorch": _pytorch, "tensorflow": _tensorflow}[framework]()
