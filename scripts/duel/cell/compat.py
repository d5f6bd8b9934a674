"""The one place for API differences between transformers 2.1.1 (2019) and 4.x (today).

- Which classes build a model type: transformers' Auto mappings decide (``auto_class_name``):
  by model type (``*_MAPPING_NAMES``, 4.10+) or by config class (``*_MAPPING``, 2.3-4.9).
  2.1.1's Auto classes pick by the checkpoint's name among nine types and map nothing, so their
  choices are written out here (``_LEGACY_AUTO``, frozen: no later type can join 2.1.1).
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
- Model classes: the nine 2019 types keep their names; in 4.x Transfo-XL moved to
  ``transformers.models.deprecated`` but stays importable from the top level.
- Loading TensorFlow weights: both eras build every variable with transformers'
  ``get_initializer`` (a truncated normal) before reading the file over them;
  ``random_init_skipped`` makes that initialiser give zeros while a model is loaded.
- Tracing: 4.x builds GPT-2's causal mask with ``torch.vmap``, which ``torch.jit.trace`` rejects
  ("unordered_map::at"), and returns a key/value cache a trace cannot record; ``jit_trace``
  traces such a model with its causal mask given explicitly (a 4-D mask, which 4.x uses as it
  is: the same arithmetic, the same output) and no cache. 2.1.1 traces them as they are.
- Generation: ``generate`` came to PyTorch models in transformers 2.3 and to TensorFlow's in 2.5
  (``generation_unsupported`` asks the model's class); ``max_length`` / ``min_length`` (prompt plus new tokens) bound
  it in every release that has it, where ``max_new_tokens`` came later (``generate_arguments``):
  4.5.1 (hf2021) and 4.31 (hf2023) generate greedily with the cache from the same keywords.
  Their PyTorch ``min_length`` indexes the scores at the end-of-sequence token, so a model whose
  token lies outside its vocabulary fails there (4.57 masks it instead).
  Encoder types (BERT, RoBERTa, ELECTRA) have a causal-LM class that is a decoder only with
  ``is_decoder=True`` (``encoder_only``).
- Compiled generation: PyTorch's is generate's own compilation of its decoding steps over a
  static key/value cache (``CompileConfig``, ``cache_implementation="static"``), for the classes
  that declare it (``_can_compile_fullgraph``; ``_supports_static_cache`` in the releases that had
  that name); TensorFlow's is ``generate`` in a ``tf.function`` compiled by XLA, which came in
  transformers 4.21 (``supports_xla_generation``). ``compiled_generation_unsupported`` asks.

transformers is imported on first use, not with this module: importing it imports the framework
and (TensorFlow 2.0) initialises its runtime, after which thread pools can no longer be set.
"""
import contextlib
import importlib
import inspect
import platform

from . import frameworks


# What transformers 2.1.1's Auto classes build for each model type it knows: (config, bare model
# for inference, model with its language-modelling head for training); TensorFlow's are "TF" +
# the same names.
_LEGACY_AUTO = {
    "bert": ("BertConfig", "BertModel", "BertForMaskedLM"),
    "gpt2": ("GPT2Config", "GPT2Model", "GPT2LMHeadModel"),
    "distilbert": ("DistilBertConfig", "DistilBertModel", "DistilBertForMaskedLM"),
    "roberta": ("RobertaConfig", "RobertaModel", "RobertaForMaskedLM"),
    "openai-gpt": ("OpenAIGPTConfig", "OpenAIGPTModel", "OpenAIGPTLMHeadModel"),
    "xlnet": ("XLNetConfig", "XLNetModel", "XLNetLMHeadModel"),
    "xlm": ("XLMConfig", "XLMModel", "XLMWithLMHeadModel"),
    "transfo-xl": ("TransfoXLConfig", "TransfoXLModel", "TransfoXLLMHeadModel"),
    "ctrl": ("CTRLConfig", "CTRLModel", "CTRLLMHeadModel"),
}
# The Auto mappings that name a task's class, tried in order: the bare model (AutoModel) for
# inference; for training the model with a language-modelling head, masked where the type has
# one (AutoModelForMaskedLM), else causal (AutoModelForCausalLM), else 3.x's AutoModelWithLMHead;
# for generation the causal one alone. TensorFlow's are the same names with "TF_" in front (TFAutoModel, ...).
_AUTO_MAPPINGS = {
    "inference": ("MODEL_MAPPING",),
    "training": ("MODEL_FOR_MASKED_LM_MAPPING", "MODEL_FOR_CAUSAL_LM_MAPPING",
                 "MODEL_WITH_LM_HEAD_MAPPING"),
    "generation": ("MODEL_FOR_CAUSAL_LM_MAPPING",),
}
# What a task's class is, in a message saying it is missing.
_TASK_CLASSES = {"inference": "model", "training": "model with a language-modelling head",
                 "generation": "model with a causal language-modelling head"}
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


def _auto_module(kind):
    """transformers' ``<kind>_auto`` module (modeling, modeling_tf, configuration): under
    ``models/auto/`` in 4.x, at the top before; None where it cannot be imported (TensorFlow's
    in an environment without TensorFlow)."""
    for name in ("transformers.models.auto.%s_auto", "transformers.%s_auto"):
        try:
            return importlib.import_module(name % kind)
        except ImportError:
            continue
    return None


def _legacy(model_type, index):
    entry = _LEGACY_AUTO.get(model_type)
    return entry[index] if entry else None


def config_class_name(model_type):
    """The config class of ``model_type`` (AutoConfig's), or None where transformers lacks it."""
    module = _auto_module("configuration")
    names = getattr(module, "CONFIG_MAPPING_NAMES", None)
    if names is not None:
        return names.get(model_type)
    mapping = getattr(module, "CONFIG_MAPPING", None)
    if mapping is not None and all(isinstance(key, str) for key in mapping):
        found = mapping.get(model_type)
        return found.__name__ if found is not None else None
    return _legacy(model_type, 0)


def auto_class_name(model_type, framework, task):
    """The class transformers' Auto classes build ``model_type`` with in ``framework`` for
    ``task`` (_AUTO_MAPPINGS), or None where this transformers has none."""
    prefix = frameworks.FRAMEWORKS[framework].class_prefix
    prefix += "_" if prefix else ""
    module = _auto_module("modeling_tf" if framework == "tensorflow" else "modeling")
    if module is None:
        return None
    if getattr(module, prefix + "MODEL_MAPPING_NAMES", None) is None and \
            getattr(module, prefix + "MODEL_MAPPING", None) is None:  # 2.1.1: no mappings
        name = _legacy(model_type, 1 if task == "inference" else 2)
        return (prefix[:-1] + name if prefix and name else name)
    config_name = config_class_name(model_type)
    for mapping in _AUTO_MAPPINGS[task]:
        names = getattr(module, prefix + mapping + "_NAMES", None)
        if names is not None:
            found = names.get(model_type)
        else:  # keyed by config class
            found = next((model for config, model in
                          (getattr(module, prefix + mapping, None) or {}).items()
                          if config.__name__ == config_name), None)
        if isinstance(found, (tuple, list)):  # several classes for one type: the first
            found = found[0]
        if found is not None:
            return getattr(found, "__name__", found)
    return None


def missing_class(model_type, framework, task):
    """Why ``framework`` cannot build ``model_type`` for ``task`` with this transformers, in
    words, or None."""
    if auto_class_name(model_type, framework, task) is not None:
        return None
    what = _TASK_CLASSES[task]
    return ("transformers %s has no %s %s for model type %r" % (
        transformers_version(), frameworks.label(framework), what, model_type))


def encoder_only(model_type, architecture):
    """Why ``model_type``'s causal-LM class is no decoder as ``architecture`` builds it, or None:
    an encoder type's class (its ``__init__`` reads ``is_decoder``) attends both ways unless the
    architecture sets ``is_decoder``, so its generate would not be causal decoding."""
    name = auto_class_name(model_type, "pytorch", "generation")
    if name is None or architecture.get("is_decoder"):
        return None
    try:
        source = inspect.getsource(model_class(name).__init__)
    except (TypeError, OSError):
        return None
    if "is_decoder" not in source:
        return None
    return ("model type %r is an encoder: its causal-LM class %s decodes only with "
            "'is_decoder': true in its architecture" % (model_type, name))


def generation_unsupported(model_type, framework):
    """Why ``model_type``'s causal-LM class in ``framework`` has no ``generate`` in this
    transformers, or None (None too where it has no such class: missing_class says so)."""
    name = auto_class_name(model_type, framework, "generation")
    if name is None or hasattr(model_class(name), "generate"):
        return None
    return "transformers %s has no generate for %s's %s" % (
        transformers_version(), frameworks.label(framework), name)


def compiled_generation_unsupported(model_type, framework):
    """Why ``model_type``'s causal-LM class in ``framework`` cannot generate compiled in this
    transformers (PyTorch: over a static key/value cache; TensorFlow: under XLA), or None."""
    name = auto_class_name(model_type, framework, "generation")
    if name is None:
        return None
    cls = model_class(name)
    if framework == "tensorflow":
        if getattr(cls, "supports_xla_generation", False):
            return None
        if not hasattr(cls, "supports_xla_generation"):
            return ("transformers %s's TensorFlow generate cannot be compiled by XLA (it can "
                    "from 4.21)" % transformers_version())
        return "transformers %s's %s does not support XLA generation" % (
            transformers_version(), name)
    if not hasattr(_transformers(), "CompileConfig"):
        return ("transformers %s's generate has no compile_config with a static key/value "
                "cache" % transformers_version())
    if getattr(cls, "_supports_static_cache", getattr(cls, "_can_compile_fullgraph", False)):
        return None
    return ("transformers %s's %s has no static key/value cache for generate to compile over "
            "(_can_compile_fullgraph is False)" % (transformers_version(), name))


def generate_arguments(prompt_length, new_tokens, pad_token_id):
    """``generate``'s keywords for greedy decoding of exactly ``new_tokens`` tokens after a
    prompt of ``prompt_length`` with the key/value cache on: the end-of-sequence token cannot
    end it early (min_length = max_length masks it until then)."""
    total = prompt_length + new_tokens
    return dict(do_sample=False, num_beams=1, max_length=total, min_length=total,
                use_cache=True, pad_token_id=pad_token_id)


def unshared_classes(model_type, task):
    """Why the PyTorch and TensorFlow classes of ``model_type`` cannot share weights (TensorFlow's
    is not "TF" + PyTorch's: another head), or None."""
    names = [auto_class_name(model_type, framework, task) for framework in frameworks.NAMES]
    if None in names or names[1] == frameworks.FRAMEWORKS["tensorflow"].class_prefix + names[0]:
        return None
    return ("transformers %s builds model type %r as %s in PyTorch but %s in TensorFlow: not "
            "the same weights" % (transformers_version(), model_type, names[0], names[1]))


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


def build_config(model_type, architecture, torchscript=False):
    """A transformers config object of ``model_type`` (its config class: config_class_name) from
    a checkpoint's architecture dict, in either era.

    ``torchscript=True`` makes models return plain tuples and untie shared weights so that
    ``torch.jit.trace`` can record them (the flag of the same name in both eras; 2019 set it).
    """
    values = dict(architecture)
    if is_legacy() and model_type in _LEGACY_VOCAB_KEYS and "vocab_size" in values:
        values[_LEGACY_VOCAB_KEYS[model_type]] = values.pop("vocab_size")
    config = model_class(config_class_name(model_type)).from_dict(values)
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
