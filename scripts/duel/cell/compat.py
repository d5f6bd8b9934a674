"""The one place for API differences between transformers 2.1.1 (2019) and 4.x (today).

- Config construction: 4.x takes ``vocab_size=`` and ``XConfig.from_dict``; 2.1.1 constructors
  take ``vocab_size_or_config_json_file``, XLNet/Transfo-XL call the vocabulary ``n_token`` and
  XLM ``n_words``. ``from_dict`` exists in both; the key is renamed for 2.1.1 here.
- Model outputs: 4.x returns ModelOutput objects, 2.1.1 returns tuples; ``last_hidden_state``
  reads either.
- Keras: 4.x's TensorFlow models use the Keras transformers picked (``tf_keras`` with
  ``TF_USE_LEGACY_KERAS=1``), 2.1.1's use ``tf.keras``; a mixed-precision policy must be set on
  that one. ``keras_policy_setter`` finds it (None where Keras has no policies: TF before 2.4).
- TF32 switches: torch 1.7+ and TensorFlow 2.4+ have them, the 2019 stack has none.
- XLA in ``tf.function``: ``jit_compile=True`` since TensorFlow 2.5, ``experimental_compile=True``
  in 2.1-2.4 (the same compilation under its first name), neither in 2.0.
- torch.compile: none before torch 2.0, and torch 2.0 refuses Python 3.11 (it raises at the first
  compiled call); ``torch_compile_unsupported`` says so before the cell builds anything.
- Thread pools: ``torch.set_num_interop_threads`` does not exist in every release and may be
  called once per process; ``set_interop_threads`` sets it where it can.
- Model classes: all nine 2019 families keep their names; in 4.x Transfo-XL moved to
  ``transformers.models.deprecated`` but stays importable from the top level.
- Loading TensorFlow weights: both eras build every variable with transformers'
  ``get_initializer`` (a truncated normal) before reading the file over them;
  ``random_init_skipped`` makes that initialiser give zeros while a model is loaded.
- Tracing: 4.x builds GPT-2's causal mask with ``torch.vmap``, which ``torch.jit.trace`` rejects
  ("unordered_map::at"), and returns a key/value cache a trace cannot record; ``jit_trace``
  traces such a model with its causal mask given explicitly (a 4-D mask, which 4.x uses as it
  is: the same arithmetic, the same output) and no cache. 2.1.1 traces them as they are.

transformers is imported on first use, not with this module: importing it imports the framework
and (TensorFlow 2.0) initialises its runtime, after which thread pools can no longer be set.
"""
import contextlib
import importlib
import inspect
import platform


# What 2.1.1 configs call the vocabulary size, where it is not ``vocab_size``.
_LEGACY_VOCAB_KEYS = {"xlnet": "n_token", "transfo-xl": "n_token", "xlm": "n_words"}
# Model types whose 4.x mask code cannot be traced (see jit_trace).
_EXPLICIT_CAUSAL_MASK = ("gpt2",)


def _transformers():
    return importlib.import_module("transformers")


def transformers_version():
    return _transformers().__version__


def is_legacy():
    """Whether this is the 2019 transformers (2.x) rather than today's."""
    return int(transformers_version().split(".")[0]) < 3


def model_class(name):
    """A transformers class by name (``BertModel``, ``TFBertModel``, ...)."""
    return getattr(_transformers(), name)


@contextlib.contextmanager
def random_init_skipped():
    """While a TensorFlow model whose every weight is then read from a file is built:
    transformers' initialiser gives zeros, not the truncated normal that the file's weights
    replace (about 1.7 s of a DistilBERT cell's start-up on 2 cores). A weight the file lacked
    would stay zero, and the check of the outputs against PyTorch's would fail the point."""
    try:
        initialiser = type(importlib.import_module(
            "transformers.modeling_tf_utils").get_initializer(0.02))
    except (ImportError, AttributeError):
        yield
        return
    original = initialiser.__call__

    def zeros(self, shape, dtype=None, **kwargs):
        import tensorflow as tf
        return tf.zeros(shape, dtype=dtype or tf.float32)

    initialiser.__call__ = zeros
    try:
        yield
    finally:
        initialiser.__call__ = original


def build_config(config_class_name, family, architecture, torchscript=False):
    """A transformers config object from a checkpoint's architecture dict, in either era.

    ``torchscript=True`` makes models return plain tuples and untie shared weights so that
    ``torch.jit.trace`` can record them (the flag of the same name in both eras; 2019 set it).
    """
    values = dict(architecture)
    if is_legacy() and family in _LEGACY_VOCAB_KEYS and "vocab_size" in values:
        values[_LEGACY_VOCAB_KEYS[family]] = values.pop("vocab_size")
    config = model_class(config_class_name).from_dict(values)
    config.torchscript = torchscript
    return config


def jit_trace(torch, model, inputs):
    """``torch.jit.trace(model, inputs)`` in either era; a model of _EXPLICIT_CAUSAL_MASK in 4.x
    is traced through a wrapper that passes its causal mask explicitly and asks for no cache."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if is_legacy() or model_type not in _EXPLICIT_CAUSAL_MASK:
        return torch.jit.trace(model, inputs)

    class WithCausalMask(torch.nn.Module):
        def __init__(self, inner):
            super(WithCausalMask, self).__init__()
            self.inner = inner

        def forward(self, input_ids):
            batch, length = input_ids.shape
            mask = torch.ones(length, length, dtype=torch.bool, device=input_ids.device).tril()
            mask = mask[None, None].expand(batch, 1, length, length)
            return self.inner(input_ids=input_ids, attention_mask=mask, use_cache=False)

    return torch.jit.trace(WithCausalMask(model), inputs)


def last_hidden_state(outputs):
    """The final hidden state from a model's outputs (ModelOutput in 4.x, tuple in 2.1.1)."""
    state = getattr(outputs, "last_hidden_state", None)
    return outputs[0] if state is None else state


def keras_module():
    """The Keras that transformers' TensorFlow models are built with (its optimisers and
    mixed-precision policies must be that Keras's)."""
    keras = getattr(importlib.import_module("transformers.modeling_tf_utils"), "keras", None)
    return keras if keras is not None else importlib.import_module("tensorflow").keras


def keras_policy_setter():
    """``set_global_policy`` of keras_module(), or None where that Keras has no
    mixed-precision policies (TensorFlow 2.0)."""
    return getattr(getattr(keras_module(), "mixed_precision", None), "set_global_policy", None)


def set_interop_threads(torch, threads):
    """PyTorch's inter-op pool to ``threads``, as TensorFlow's is (the adapters): a setter that
    torch allows once per process, before any inter-op work; older releases without it keep
    their default."""
    setter = getattr(torch, "set_num_interop_threads", None)
    if setter is None:
        return
    try:
        setter(threads)
    except RuntimeError:  # already set or started in this process
        pass


# TF32 (tensor-float-32: fp32 matrix products on Ampere+ tensor cores, 10-bit mantissa). Each
# framework has its own switches, and the 2019 stack has none (torch 1.3, TensorFlow 2.0).
_TORCH_TF32_FLAGS = (("torch.backends.cuda.matmul.allow_tf32", ("cuda", "matmul")),
                     ("torch.backends.cudnn.allow_tf32", ("cudnn",)))


def torch_tf32_switches(torch):
    """[(name, owner)] of the ``allow_tf32`` flags this torch has (matmul since 1.7, cuDNN
    convolutions since 1.7; none in torch 1.3)."""
    found = []
    for name, path in _TORCH_TF32_FLAGS:
        owner = torch.backends
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and hasattr(owner, "allow_tf32"):
            found.append((name, owner))
    return found


def tensorflow_tf32_switch(tf):
    """(set, get) of TensorFlow's tensor-float-32 switch (2.4+), or None (TensorFlow 2.0)."""
    experimental = tf.config.experimental
    setter = getattr(experimental, "enable_tensor_float_32_execution", None)
    getter = getattr(experimental, "tensor_float_32_execution_enabled", None)
    return (setter, getter) if setter is not None and getter is not None else None


def tf_function_xla_options(tf):
    """The ``tf.function`` keyword arguments that compile the function with XLA, or None where
    ``tf.function`` has none (TensorFlow 2.0): ``jit_compile`` (2.5+), ``experimental_compile``
    (2.1-2.4)."""
    parameters = inspect.signature(tf.function).parameters
    for name in ("jit_compile", "experimental_compile"):
        if name in parameters:
            return {name: True}
    return None


def torch_compile_unsupported(torch):
    """Why ``torch.compile`` cannot run in this torch on this interpreter, or None where it can:
    it came with torch 2.0, whose Dynamo refuses Python 3.11+ (``check_if_dynamo_supported``
    raises what the first compiled call would)."""
    if not hasattr(torch, "compile"):
        return "torch.compile does not exist in torch %s (it came with 2.0)" % torch.__version__
    try:
        from torch._dynamo.eval_frame import check_if_dynamo_supported
    except ImportError:  # a torch that no longer has the check supports its interpreters
        return None
    try:
        check_if_dynamo_supported()
    except RuntimeError as error:
        return ("torch.compile cannot run in torch %s on Python %s: %s"
                % (torch.__version__, platform.python_version(), error))
    return None
