"""TensorFlow adapter: eager, ``tf.function`` and XLA on the CPU.

Mode ``function`` wraps the model call in one ``tf.function`` per cell, retraced per input shape
(the first call of each shape traces; it is ``first_call_ms``, never a sample). The 2019 script
always did this, so the 2019 TensorFlow figures are mode ``function`` with method ``hf2019``.
Mode ``xla`` is the same with ``jit_compile=True`` (TensorFlow 2.5+); TensorFlow 2.0 had only
``tf.config.optimizer.set_jit(True)``, auto-clustering for GPUs, so on a CPU it is skipped there.
``duel`` passes ``training=False``; ``hf2019`` calls ``model(inputs)`` as 2019 did.
"""
import inspect
import os

import tensorflow as tf

from .. import compat
from ..models import FAMILIES
from .base import Adapter

HAS_JIT_COMPILE = "jit_compile" in inspect.signature(tf.function).parameters


class TensorFlowAdapter(Adapter):
    framework = "tensorflow"
    modes = ("eager", "function", "xla")
    out_of_memory_words = Adapter.out_of_memory_words + ("oom when allocating",)

    def __init__(self, mode, device, threads):
        super(TensorFlowAdapter, self).__init__(mode, device, threads)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        self._functions = {}

    def environment(self):
        return {
            "framework_version": tf.__version__,
            "transformers_version": compat.transformers_version(),
            "cuda": None,
            "cudnn": None,
            "device_name": "cpu",
        }

    def unsupported_reason(self, spec):
        if self.mode == "xla" and not HAS_JIT_COMPILE:
            return ("XLA in TensorFlow %s is tf.config.optimizer.set_jit(True), which clusters "
                    "for GPUs only: nothing to compile on a CPU" % tf.__version__)
        return None

    def build(self, spec, seed, weights_dir=None):
        family = FAMILIES[spec.family]
        model_class = compat.model_class(family.tensorflow_class)
        if weights_dir:
            self.model = model_class.from_pretrained(os.path.join(weights_dir, "tensorflow"))
        else:
            tf.random.set_seed(seed)
            self.model = model_class(compat.build_config(
                family.config_class, spec.family, spec.architecture))
        self._functions = {}

    def inputs(self, token_ids):
        return tf.constant(token_ids, dtype=tf.int32)

    def to_numpy(self, tensor):
        return tensor.numpy()

    def _forward(self, method):
        model = self.model
        if method == "hf2019":
            return lambda inputs: model(inputs)
        return lambda inputs: model(inputs, training=False)

    def call_for(self, method, inputs):
        forward = self._forward(method)
        if self.mode in ("function", "xla"):
            if method not in self._functions:
                options = {"jit_compile": True} if self.mode == "xla" else {}
                self._functions[method] = tf.function(forward, **options)
            forward = self._functions[method]
        return lambda: forward(inputs)

    def is_out_of_memory(self, error):
        if isinstance(error, tf.errors.ResourceExhaustedError):
            return True
        return super(TensorFlowAdapter, self).is_out_of_memory(error)
