"""TensorFlow adapter: eager mode and ``tf.function`` on the CPU.

Mode ``function`` wraps the model call in one ``tf.function`` per cell, retraced per input shape
(the first call of each shape traces; warm-up absorbs it). The 2019 script always did this, so
the 2019 TensorFlow figures are mode ``function`` with method ``hf2019``. ``duel`` passes
``training=False``; ``hf2019`` calls ``model(inputs)`` as 2019 did.
"""
import tensorflow as tf

from .. import compat
from ..models import FAMILIES
from .base import Adapter


class TensorFlowAdapter(Adapter):
    framework = "tensorflow"
    modes = ("eager", "function")
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

    def build(self, spec, seed):
        family = FAMILIES[spec.family]
        tf.random.set_seed(seed)
        config = compat.build_config(family.config_class, spec.family, spec.architecture)
        self.model = compat.model_class(family.tensorflow_class)(config)
        self._functions = {}

    def inputs(self, token_ids):
        return tf.constant(token_ids, dtype=tf.int32)

    def _forward(self, method):
        model = self.model
        if method == "hf2019":
            return lambda inputs: model(inputs)
        return lambda inputs: model(inputs, training=False)

    def call_for(self, method, inputs):
        forward = self._forward(method)
        if self.mode == "function":
            if method not in self._functions:
                self._functions[method] = tf.function(forward)
            forward = self._functions[method]
        return lambda: forward(inputs)

    def is_out_of_memory(self, error):
        if isinstance(error, tf.errors.ResourceExhaustedError):
            return True
        return super(TensorFlowAdapter, self).is_out_of_memory(error)
