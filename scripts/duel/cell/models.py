"""Model specs: what each benchmarked model is, read from ``config/models/<name>.json`` or from a
folder ``save_pretrained`` wrote.

A JSON file holds ``name``, ``family`` (transformers' ``model_type``: its Auto classes pick the
classes, compat.auto_class_name), ``max_sequence_length`` (the tokenizer limit the 2019 script
applied, or null) and ``architecture`` (the checkpoint's config.json hyper-parameters). Its
weights are never downloaded: the model is built from that architecture with seeded random
weights (inference speed does not depend on the weight values).

A folder (``config.json`` and the PyTorch weights) is a model with weights of its own: its name is
the folder's, its family the config's ``model_type``, its maximum length the config's position
table, and both frameworks load its weights (TensorFlow from PyTorch's, ``from_pt=True``).
"""
import json
import os
from collections import namedtuple

from . import compat

ModelSpec = namedtuple("ModelSpec", "name family max_sequence_length architecture weights")
# weights: the save_pretrained folder the model is loaded from, or None (seeded random weights)
ModelSpec.__new__.__defaults__ = (None,)

CONFIG_FILE = "config.json"  # what save_pretrained names a model's config
# Where a config.json gives the longest input its position table holds.
POSITION_KEYS = ("max_position_embeddings", "n_positions")


def load_model_spec(path):
    """Read one model's JSON file, or the config of a save_pretrained folder, into a ModelSpec.
    Whether transformers can build its family is the adapters' and planning's question."""
    if os.path.isdir(path):
        return folder_spec(path)
    with open(path) as handle:
        document = json.load(handle)
    return ModelSpec(
        name=document["name"],
        family=document["family"],
        max_sequence_length=document.get("max_sequence_length"),
        architecture=document["architecture"],
    )


def folder_spec(folder):
    """The ModelSpec of a folder ``save_pretrained`` wrote: its config.json is the architecture."""
    with open(os.path.join(folder, CONFIG_FILE)) as handle:
        config = json.load(handle)
    limit = next((config[key] for key in POSITION_KEYS if isinstance(config.get(key), int)),
                 None)
    return ModelSpec(name=os.path.basename(os.path.normpath(folder)),
                     family=config.get("model_type"), max_sequence_length=limit,
                     architecture=config, weights=os.path.abspath(folder))


def vocab_size(spec):
    """The vocabulary size, which bounds the random token ids fed to the model."""
    return int(spec.architecture["vocab_size"])


def class_name(spec, framework, task):
    """The transformers class of ``spec`` in ``framework`` for ``task`` (compat.auto_class_name:
    the bare model for inference, with its language-modelling head for training, with its
    causal one for generation)."""
    return compat.auto_class_name(spec.family, framework, task)


def missing(spec, framework, task):
    """Why this transformers cannot build ``spec`` in ``framework`` for ``task``, or None (for
    generation: a decoder with a ``generate``, compat.encoder_only and generation_unsupported)."""
    reason = compat.missing_class(spec.family, framework, task)
    if reason is None and task == "generation":
        return (compat.generation_unsupported(spec.family, framework)
                or compat.encoder_only(spec.family, spec.architecture))
    return reason


def build_pytorch(spec, task, seed, torchscript=False):
    """``spec``'s PyTorch model: its folder's weights, or weights seeded by ``seed`` (a head the
    folder lacks is seeded too)."""
    import torch

    model_class = compat.model_class(class_name(spec, "pytorch", task))
    torch.manual_seed(seed)
    if spec.weights:
        return model_class.from_pretrained(spec.weights, torchscript=torchscript)
    return model_class(compat.build_config(spec.family, spec.architecture,
                                           torchscript=torchscript))


def build_tensorflow(spec, task, seed):
    """``spec``'s TensorFlow model: its folder's PyTorch weights (``from_pt``), or weights seeded
    by ``seed``."""
    import tensorflow as tf

    model_class = compat.model_class(class_name(spec, "tensorflow", task))
    tf.random.set_seed(seed)
    if spec.weights:
        return model_class.from_pretrained(spec.weights, from_pt=True)
    return model_class(compat.build_config(spec.family, spec.architecture))
