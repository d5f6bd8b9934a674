"""Export a model's shared reference weights to its framework's own deployment format.

Both start from the model as the graph modes build it, with ``config.use_cache = False`` (see
``without_cache``).
- ``torchscript``: the PyTorch model (``config.torchscript = True``, eval, under no_grad) traced
  with ``torch.jit.trace`` on each point's input and saved, one file per batch x length (a trace
  records one shape, as the ``torchscript`` mode does; a file per shape embeds the weights each
  time, so the folder grows with the grid).
- ``savedmodel``: the TensorFlow model saved once with ``tf.saved_model.save`` and a serving
  signature ``serving_default(input_ids: int32[None, None]) -> {last_hidden_state}``: one
  artifact for every batch size and length.

The folder's ``artifacts.json`` (written last, atomically) lists every artifact with its status
(``ok``; ``skipped`` with the reason where the format cannot hold the model, e.g. Transfo-XL's
TorchScript; ``error`` with the exporter's message), the export's wall time and the artifact's
size on disk. The deployment modes (adapters/deployed*.py) read it through artifacts.py.
"""
import os
import sys
import time
import traceback

from . import compat, contract, files
from .artifacts import ALL_SHAPES, MANIFEST, shape_key
from .modes import ARTIFACT_FORMATS

SIGNATURE = "serving_default"


def folder_bytes(path):
    """Bytes on disk of a file, or of every file under a folder."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)


def _timed(entries, key, path, export, log):
    """Run ``export(path)``; record its status, wall time and size under ``key``."""
    began = time.perf_counter()
    try:
        export(path)
        entries[key] = {"status": "ok", "path": os.path.basename(path),
                        "export_s": time.perf_counter() - began, "bytes": folder_bytes(path)}
    except Exception as error:  # the points of this artifact become error rows
        traceback.print_exc(file=log)
        entries[key] = {"status": "error", "message": "export failed: " + contract.error_line(error)}


def export_torchscript(adapter, spec, shapes, seed, folder, log):
    import torch

    from .sweep import token_ids

    entries = {}
    for batch_size, seq_len in shapes:
        inputs = adapter.inputs(token_ids(spec, batch_size, seq_len, seed))

        def export(path):
            with torch.no_grad():
                traced = compat.jit_trace(torch, adapter.model, inputs)
            traced.save(path)
        key = shape_key(batch_size, seq_len)
        _timed(entries, key, os.path.join(folder, key + ".pt"), export, log)
    return entries, {}


def export_savedmodel(adapter, spec, shapes, seed, folder, log):
    import tensorflow as tf

    model = adapter.model
    module = tf.Module()
    module.model = model

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="input_ids")])
    def serve(input_ids):
        hidden = compat.last_hidden_state(model(input_ids, training=False))
        return {"last_hidden_state": tf.cast(hidden, tf.float32)}

    module.serve = serve
    entries = {}
    _timed(entries, ALL_SHAPES, os.path.join(folder, "savedmodel"),
           lambda path: tf.saved_model.save(module, path, signatures={SIGNATURE: serve}), log)
    signature = {}
    if entries[ALL_SHAPES]["status"] == "ok":
        signature = savedmodel_tensor_names(os.path.join(folder, "savedmodel"))
    return entries, signature


def savedmodel_tensor_names(path):
    """The graph tensor names of the serving signature's input and output (for the C API)."""
    from tensorflow.python.tools import saved_model_utils

    meta_graph = saved_model_utils.get_meta_graph_def(path, "serve")
    signature = meta_graph.signature_def[SIGNATURE]
    return {"input": signature.inputs["input_ids"].name,
            "output": signature.outputs["last_hidden_state"].name}


def without_cache(model):
    """Inference of one full sequence: no key/value cache in the outputs (today's GPT-2 returns
    a cache object that torch.jit.trace cannot record, and a SavedModel would compute it for
    nothing; the last hidden state is the same)."""
    config = getattr(model, "config", None)
    if config is not None and getattr(config, "use_cache", None):
        config.use_cache = False


EXPORTERS = {"torchscript": export_torchscript, "savedmodel": export_savedmodel}


def export_artifacts(artifact_format, spec, shapes, seed, weights_dir, device, threads, folder,
                     log=sys.stderr):
    """Export ``spec``'s shared weights (``weights_dir``) to ``artifact_format`` in ``folder``,
    one artifact per shape or one for all; returns the manifest (also written to the folder)."""
    from .adapters import load_adapter

    framework = ARTIFACT_FORMATS[artifact_format].framework
    if not os.path.isdir(folder):
        os.makedirs(folder)
    # The graph mode's build: the same model object that mode times.
    exported_from = ARTIFACT_FORMATS[artifact_format].exported_from
    adapter = load_adapter(framework)(exported_from, device, "fp32", threads)
    shapes = [(batch, length) for batch, length in sorted(set(shapes))
              if spec.max_sequence_length is None or length <= spec.max_sequence_length]
    manifest = {"format": artifact_format, "framework": framework, "model": spec.name,
                "device": device, "seed": seed, "skipped": None, "artifacts": {}, "signature": {}}
    manifest.update(adapter.environment())
    skipped = adapter.unsupported_reason(spec)
    if skipped:
        manifest["skipped"] = skipped
    else:
        began = time.perf_counter()
        try:
            adapter.build(spec, seed, weights_dir)
            without_cache(adapter.model)
            manifest["build_s"] = time.perf_counter() - began
            exporter = EXPORTERS[artifact_format]
            manifest["artifacts"], manifest["signature"] = exporter(adapter, spec, shapes, seed,
                                                                     folder, log)
        except Exception as error:
            traceback.print_exc(file=log)
            manifest["error"] = "export failed: " + contract.error_line(error)
    manifest["files"] = files.describe_files(
        folder, sorted(name for name in os.listdir(folder) if name != MANIFEST))
    files.write_json(os.path.join(folder, MANIFEST), manifest, sort_keys=True)
    return manifest
