"""A model's architecture file (or save_pretrained folder), read and checked before any job
starts: a model type transformers builds in both frameworks, with the keys planning reads, and
its sizes (hidden size, layers, vocabulary, about how many weights).
"""
import functools
import json
import os

from duel.cell import contract, flops, frameworks, models

from duel.host.plan.config_keys import PlanError

def model_config_path(models_dir, model):
    """``<models_dir>/<model>.json``, or the folder ``<models_dir>/<model>/`` where there is one
    and no such file (a model save_pretrained wrote: models.folder_spec)."""
    path = os.path.join(models_dir, model + ".json")
    folder = os.path.join(models_dir, model)
    return folder if not os.path.exists(path) and os.path.isdir(folder) else path


# What a save_pretrained folder holds its PyTorch weights in, in one release or another.
WEIGHT_FILES = ("pytorch_model.bin", "model.safetensors", "pytorch_model.bin.index.json",
                "model.safetensors.index.json")


def _read_document(path, model):
    """The model's JSON object (a file's, or a folder's config.json with its name and family)."""
    folder = os.path.isdir(path)
    source = os.path.join(path, models.CONFIG_FILE) if folder else path
    if folder and not os.path.isfile(source):
        raise PlanError("%s: a model folder holds what save_pretrained writes, and there is no "
                        "%s" % (path, models.CONFIG_FILE))
    if folder and not any(os.path.isfile(os.path.join(path, name)) for name in WEIGHT_FILES):
        raise PlanError("%s: model %r has no PyTorch weights (%s)" % (
            path, model, " or ".join(WEIGHT_FILES[:2])))
    try:
        with open(source) as handle:
            document = json.load(handle)
    except ValueError as error:  # json.JSONDecodeError, or bytes that are not UTF-8
        raise PlanError("%s: not valid JSON (%s); fix the file, or drop model %r from config "
                        "key 'models'" % (source, error, model))
    if not isinstance(document, dict):
        raise PlanError("%s: a model config is a JSON object with name, family and "
                        "architecture, not a JSON %s" % (source, type(document).__name__))
    if folder:
        spec = models.folder_spec(path)
        return {"name": spec.name, "family": spec.family, "architecture": spec.architecture,
                "max_sequence_length": spec.max_sequence_length}, spec.weights
    return document, None


def buildable(model_type, path, model):
    """Refuse ``model`` unless the workflow's transformers builds its ``model_type`` in both
    frameworks from one set of weights (its Auto classes decide: compat.auto_class_name); an
    older era without the type gives ``skipped`` rows instead (adapters.base)."""
    from duel.cell import compat

    reason = next((why for why in [compat.missing_class(model_type, framework, "inference")
                                   for framework in frameworks.NAMES]
                   + [compat.unshared_classes(model_type, "inference")] if why), None)
    if reason:
        raise PlanError("%s: model %r cannot run: %s" % (path, model, reason))


def read_model_config(path, model):
    """The model's architecture file (or save_pretrained folder) as a ModelSpec, or a PlanError
    naming the file and what is wrong with it: not JSON, not a model type transformers builds in
    both frameworks, or without a key planning reads."""
    document, weights = _read_document(path, model)
    family = document.get("family")
    if not isinstance(family, str):
        raise PlanError("%s: no 'family' (transformers' model_type, e.g. bert)" % path)
    if document.get("name") != model:
        raise PlanError("%s names model %r, expected %r" % (path, document.get("name"), model))
    architecture = document.get("architecture")
    if not isinstance(architecture, dict):
        raise PlanError("%s: no 'architecture' object (the checkpoint's config.json "
                        "hyper-parameters)" % path)
    buildable(family, path, model)
    spec = models.ModelSpec(document["name"], family, document.get("max_sequence_length"),
                            architecture, weights)
    if family in flops.DIMENSIONS:
        needed = flops.DIMENSIONS[family][:2] + ("vocab_size",) + \
            (("embedding_size",) if family in flops.PROJECTED_EMBEDDINGS else ())
        missing = [key for key in needed if not _positive(architecture.get(key))]
    else:
        try:
            found = sizes(spec)
        except Exception as error:  # transformers' own words on what the config lacks
            raise PlanError("%s: transformers cannot make a %s config of 'architecture': %s"
                            % (path, family, contract.error_line(error)))
        missing = [key for key, value in zip(SIZE_NAMES, found) if not _positive(value)]
    if missing:
        raise PlanError("%s: 'architecture' lacks %s (a positive integer each, read for a %s "
                        "model's memory, FLOPs and inputs)" % (path, ", ".join(missing), family))
    return spec


def _positive(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_models(model_names, models_dir):
    """Every model needs ``<models_dir>/<model>.json`` (or a save_pretrained folder of that name),
    of a model type transformers builds in both frameworks, naming the same model:
    {model: ModelSpec}."""
    if not os.path.isdir(models_dir):
        raise PlanError("config key 'models_dir': %s is not a folder" % models_dir)
    available = sorted(
        name[: -len(".json")] for name in os.listdir(models_dir) if name.endswith(".json")
    )
    specs = {}
    for model in model_names:
        path = model_config_path(models_dir, model)
        if not os.path.exists(path):
            raise PlanError(
                "config key 'models': unknown model %r (no file %s, nor a folder save_pretrained "
                "wrote). Known models: %s" % (model, path, ", ".join(available))
            )
        specs[model] = read_model_config(path, model)
    return specs


SIZE_NAMES = ("hidden_size", "num_hidden_layers", "vocab_size")


def sizes(spec):
    """(hidden size, layers, vocabulary) of ``spec``: its family's keys (flops.DIMENSIONS), else
    the names every transformers config answers to (its attribute_map), read from the config the
    workflow's transformers builds of the architecture."""
    if spec.family in flops.DIMENSIONS:
        hidden_key, layers_key, _ = flops.DIMENSIONS[spec.family]
        return tuple(spec.architecture.get(key) for key in (hidden_key, layers_key, "vocab_size"))
    return _config_sizes(spec.family, json.dumps(spec.architecture, sort_keys=True))


@functools.lru_cache(maxsize=None)
def _config_sizes(model_type, architecture):
    from duel.cell import compat

    config = compat.build_config(model_type, json.loads(architecture))
    return tuple(getattr(config, name, None) for name in SIZE_NAMES)


def parameters(spec):
    """About how many weights the bare model has: vocab x hidden + 12 x layers x hidden^2
    (embeddings and transformer blocks), from its sizes."""
    hidden, layers, vocab = sizes(spec)
    return vocab * hidden + 12 * layers * hidden * hidden
