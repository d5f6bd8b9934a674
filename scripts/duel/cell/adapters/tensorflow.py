"""TensorFlow adapter: eager, ``tf.function`` and XLA, on the CPU or the first GPU.

Mode ``function`` wraps the model call in one ``tf.function`` per cell, retraced per input shape
(the first call of each shape traces; it is ``first_call_ms``, never a sample). The 2019 script
always did this, so the 2019 TensorFlow figures are mode ``function`` with method ``timeit``.
Mode ``xla`` is the same with ``jit_compile=True`` (TensorFlow 2.5+; ``experimental_compile=True``
in 2.1-2.4, compat.tf_function_xla_options); TensorFlow 2.0 had only
``tf.config.optimizer.set_jit(True)``, auto-clustering for GPUs: used on a GPU, skipped on a CPU.
``duel`` passes ``training=False``; ``timeit`` calls ``model(inputs)`` as 2019 did.
Generation in mode xla is ``model.generate`` in a ``tf.function(jit_compile=True)``, one per
prompt length and new tokens in a cell (each batch size a trace of it), as
transformers' XLA generation asks: the prompt left-padded (masked) to a multiple of
``XLA_PROMPT_MULTIPLE`` tokens, so prompts of nearby lengths share one compiled shape. Its first
token cannot be a generate of one new token: XLA generate pads its key/value cache to
``max_length - 1`` after the first step, ``max_length - prompt - 2`` padding positions, -1 for
one new token ("Fill dimensions must be >= 0"). So the first-token call is the whole call's
generate (the same ``max_length``) stopped after its first step: every token id ends the
sequence, the loop after the prefill runs no step (``first_token_call``).
Precision: fp16/bf16 by a Keras mixed-precision policy set before the model is built (variables
stay fp32); TensorFlow 2.0 had only the ``auto_mixed_precision`` graph rewrite (2019's ``--amp``),
fp16 on GPUs in graph modes. GPU: memory growth instead of taking the whole GPU; the barrier is
``tf.test.experimental.sync_devices`` where it exists, else reading one value of the last output;
the device peak is ``tf.config.experimental.get_memory_info``'s, reset per point (TF 2.9+).
TF32: ``tf.config.experimental.enable_tensor_float_32_execution`` (TF 2.4+, on by default there)
set from the cell's ``tf32`` (default off: strict fp32, as PyTorch's matmul default).
"""
import tensorflow as tf

from .. import builds, compat, models, reference
from ..modes import IN_PYTHON, mode_names
from .base import Adapter, no_gpu_name

XLA_OPTIONS = compat.tf_function_xla_options(tf)  # None: no XLA in tf.function (TF 2.0)
XLA_PROMPT_MULTIPLE = 8  # what transformers' XLA generation examples pad prompts to
POLICIES = {"fp16": "mixed_float16", "bf16": "mixed_bfloat16"}
EXPERIMENTAL = tf.config.experimental
SYNC_DEVICES = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)


def _build_info():
    """CUDA and cuDNN versions TensorFlow was built with (TF 2.0 kept them in build_info)."""
    if hasattr(tf.sysconfig, "get_build_info"):
        return dict(tf.sysconfig.get_build_info())
    from tensorflow.python.platform import build_info
    return {"cuda_version": getattr(build_info, "cuda_version_number", None),
            "cudnn_version": getattr(build_info, "cudnn_version_number", None)}


class TensorFlowAdapter(Adapter):
    framework = "tensorflow"
    modes = mode_names("tensorflow", IN_PYTHON)
    out_of_memory_words = Adapter.out_of_memory_words + ("oom when allocating",)

    def __init__(self, mode, device, precision, threads, task="inference", tf32=False):
        super(TensorFlowAdapter, self).__init__(mode, device, precision, threads, task, tf32)
        self.set_tf32(tf32)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        self._gpus = EXPERIMENTAL.list_physical_devices("GPU")
        for gpu in self._gpus:  # before the runtime starts: grow, do not take the whole GPU
            EXPERIMENTAL.set_memory_growth(gpu, True)
        if device == "cuda" and mode == "xla" and XLA_OPTIONS is None:
            tf.config.optimizer.set_jit(True)  # 2019's --xla: auto-clustering on the GPU
        self._amp_rewrite = precision == "fp16" and compat.keras_policy_setter() is None
        if self._amp_rewrite and device == "cuda":
            tf.config.optimizer.set_experimental_options({"auto_mixed_precision": True})
        self._functions = {}
        self._last_output = None

    def environment(self):
        build = _build_info()
        cuda = self.device == "cuda" and bool(self._gpus)
        details = getattr(EXPERIMENTAL, "get_device_details", None)
        name = details(self._gpus[0]).get("device_name") if cuda and details else None
        return {
            "framework_version": tf.__version__,
            "framework_build": builds.tensorflow(tf),
            "transformers_version": compat.transformers_version(),
            "cuda": build.get("cuda_version"),
            "cudnn": build.get("cudnn_version") if cuda else None,
            "device_name": (name or "GPU 0") if cuda else no_gpu_name(self.device),
            "tf32": self.tf32_state(),
        }

    def set_tf32(self, enabled):
        switch = compat.tensorflow_tf32_switch(tf)
        if switch is not None:
            switch[0](bool(enabled))

    def tf32_flags(self):
        switch = compat.tensorflow_tf32_switch(tf)
        if switch is None:
            return {}
        return {"tf.config.experimental.tensor_float_32_execution_enabled": switch[1]()}

    def mode_unsupported(self, spec):
        if self.mode == "xla" and XLA_OPTIONS is None and self.device == "cpu":
            return ("XLA in TensorFlow %s is tf.config.optimizer.set_jit(True), which clusters "
                    "for GPUs only: nothing to compile on a CPU" % tf.__version__)
        if self.mode == "xla" and self.task == "generation":
            if XLA_OPTIONS is None:
                return ("TensorFlow %s cannot compile a function with XLA (jit_compile), which "
                        "XLA generation needs" % tf.__version__)
            return compat.compiled_generation_unsupported(spec.family, self.framework)
        return None

    def precision_unsupported(self):
        if self.precision == "fp32" or compat.keras_policy_setter() is not None:
            return None
        if self._amp_rewrite and self.device == "cuda" and self.mode != "eager":
            return None
        return ("TensorFlow %s has no Keras mixed-precision policy; its only reduced precision "
                "is the auto_mixed_precision graph rewrite (fp16, GPU, graph modes)"
                % tf.__version__)

    def require_device(self):
        if self.device == "cuda" and not self._gpus:
            raise RuntimeError("device cuda asked for, but TensorFlow %s sees no GPU (built "
                               "with CUDA: %s)" % (tf.__version__, tf.test.is_built_with_cuda()))

    def build(self, spec, seed, weights_dir=None):
        self.require_device()
        set_policy = compat.keras_policy_setter()
        if self.precision in POLICIES and set_policy is not None:
            set_policy(POLICIES[self.precision])
        if weights_dir:
            model_class = compat.model_class(models.class_name(spec, self.framework, self.task))
            with compat.random_init_skipped():
                self.model = model_class.from_pretrained(self.weights_folder(weights_dir))
        else:
            self.model = models.build_tensorflow(spec, self.task, seed)
        self._functions = {}
        self.fresh = True

    def adopt(self, model):
        Adapter.adopt(self, model)
        self._functions = {}

    def inputs(self, token_ids):
        return tf.constant(token_ids, dtype=tf.int32)

    def to_numpy(self, tensor):
        return tf.cast(tensor, tf.float32).numpy()

    def _forward(self, method):
        model = self.model
        if method == "timeit":
            return lambda inputs: model(inputs)
        return lambda inputs: model(inputs, training=False)

    def _compiled(self, function):
        """``function`` as the mode runs it: eager as it is, else a tf.function (XLA-compiled
        in mode xla where tf.function can)."""
        if self.mode == "eager":
            return function
        options = XLA_OPTIONS if self.mode == "xla" and XLA_OPTIONS is not None else {}
        return tf.function(function, **options)

    def _loss(self, inputs, training):
        """Cross-entropy of the model's predictions for each input token at its position."""
        logits = self.model(inputs, training=training)[0]
        logits = tf.cast(tf.reshape(logits, [-1, tf.shape(logits)[-1]]), tf.float32)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(inputs, [-1]), logits=logits))

    def training_step(self, inputs, learning_rate):
        optimizer = compat.keras_module().optimizers.Adam(learning_rate=learning_rate)
        model = self.model

        def step():
            with tf.GradientTape() as tape:
                loss = self._loss(inputs, training=True)
            variables = model.trainable_variables
            gradients = tape.gradient(loss, variables)
            optimizer.apply_gradients([(gradient, variable) for gradient, variable
                                       in zip(gradients, variables) if gradient is not None])
            return loss
        return self._device_call(self._compiled(step))

    def evaluation_loss(self, inputs):
        return float(self._loss(inputs, training=False).numpy())

    def _device_call(self, function):
        """``function`` as a timed call: on a GPU it keeps its output for the barrier."""
        if self.device == "cpu":
            return function

        def call():
            self._last_output = function()
            return self._last_output
        return call

    def call_for(self, method, inputs):
        if method not in self._functions:
            self._functions[method] = self._compiled(self._forward(method))
        forward = self._functions[method]
        return self._device_call(lambda: forward(inputs))

    def generate_call(self, inputs, new_tokens, **changes):
        pad = reference.pad_token(self.model.config)
        inputs, mask = self._prompt(inputs, pad)
        kwargs = compat.generate_arguments(int(inputs.shape[1]), new_tokens, pad)
        kwargs.update(changes)
        model = self.model
        if self.mode != "xla":
            return self._device_call(lambda: model.generate(inputs, attention_mask=mask, **kwargs))
        # Its keywords closed over, not passed: tf.function would read every one of a long
        # list (first_token_call's) at every call to find its trace.
        key = ("generate", int(inputs.shape[1]), new_tokens, bool(changes))
        if key not in self._functions:
            self._functions[key] = tf.function(
                lambda prompt, prompt_mask: model.generate(prompt, attention_mask=prompt_mask,
                                                           **kwargs), **XLA_OPTIONS)
        generate = self._functions[key]
        return self._device_call(lambda: generate(inputs, mask))

    def first_token_call(self, inputs, new_tokens):
        if self.mode != "xla":
            return self.generate_call(inputs, 1)
        every_token = list(range(self.model.config.vocab_size))
        return self.generate_call(inputs, new_tokens, min_length=0, eos_token_id=every_token)

    def _padding(self, prompt_length):
        """The masked tokens before a prompt of ``prompt_length`` (mode xla), else 0."""
        if self.mode != "xla":
            return 0
        return -prompt_length % XLA_PROMPT_MULTIPLE

    def _prompt(self, inputs, pad):
        """The prompt as generate gets it and its attention mask: left-padded in mode xla."""
        padding = self._padding(int(inputs.shape[1]))
        mask = tf.ones_like(inputs)
        if padding:
            zeros = tf.zeros((int(inputs.shape[0]), padding), dtype=inputs.dtype)
            inputs = tf.concat([zeros + pad, inputs], axis=1)
            mask = tf.concat([zeros, mask], axis=1)
        return inputs, mask

    def generated_tokens(self, output, prompt_length):
        return output.numpy()[:, prompt_length + self._padding(prompt_length):]

    def synchronise(self):
        if self.device != "cuda":
            return
        if SYNC_DEVICES is not None:
            SYNC_DEVICES()
        elif self._last_output is not None:  # one value of the output waits for all of it
            output = self._last_output
            if self.task != "training":
                output = self.last_hidden_state(output)
            tf.reshape(output, [-1])[0].numpy()

    def reset_device_peak(self):
        if self.device == "cuda" and hasattr(EXPERIMENTAL, "reset_memory_stats"):
            EXPERIMENTAL.reset_memory_stats("GPU:0")

    def device_peak_mib(self):
        if self.device != "cuda" or not hasattr(EXPERIMENTAL, "reset_memory_stats"):
            return None
        return EXPERIMENTAL.get_memory_info("GPU:0")["peak"] / 2.0 ** 20

    @property
    def device_peak_method(self):
        if self.device == "cuda" and hasattr(EXPERIMENTAL, "reset_memory_stats"):
            return "tf.config.experimental.get_memory_info peak, reset per point"
        return None

    def is_out_of_memory(self, error):
        if isinstance(error, tf.errors.ResourceExhaustedError):
            return True
        return super(TensorFlowAdapter, self).is_out_of_memory(error)

    def release_point(self):
        self._last_output = None
        super(TensorFlowAdapter, self).release_point()
