"""From a validated config to the list of cells this machine will run, or a clear refusal.

The JSON schema catches wrong types, unknown keys and unsafe names; this module checks what a
schema cannot: that every model has an architecture file (or a save_pretrained folder) of a
model type transformers builds in both frameworks, that each requested era has an
environment and each device exists here, and that a docker or apptainer runner has its engine
and every image it will need. Every refusal names the key and the bad value, and happens while
Snakemake plans, before any job starts.
"""
import collections
import functools
import json
import os
import shutil
import subprocess
import sys

import yaml

from duel.cell import contract, flops, frameworks, models, modes

from duel.host.plan import deployment, layout
from duel.host.stacks import eras as era_envs
from duel.host.stacks import images

Cell = contract.Cell
SCHEMA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "config", "schema",
                      "config.schema.yaml")


@functools.lru_cache(maxsize=None)
def _schema():
    with open(SCHEMA) as handle:
        return yaml.safe_load(handle)


def processes_per_cell(config):
    """Config ``replicates``, else the schema's default: a config that skipped validation (a
    caller's own dict) plans as a validated one would."""
    return config.get("replicates", _schema()["properties"]["replicates"]["default"])


class PlanError(ValueError):
    """The config asks for something this workflow or this machine cannot run."""


def as_list(value):
    """A config value that may be one item or a list, as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _number(item):
    """'3' -> 3, '0.5' -> 0.5, 'true' -> True; anything else unchanged (for the schema to
    judge)."""
    if not isinstance(item, str):
        return item
    if item.strip().lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[item.strip().lower()]
    for kind in (int, float):
        try:
            return kind(item.strip())
        except ValueError:
            pass
    return item


BOOLEAN_KEYS = ("tf32", "keep_artifacts", "accept_drift", "strict")
BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def prepare_config(config, warn=None):
    """What planning does to a config before the schema judges it: old names translated
    (renamed_keys) and command-line strings turned into numbers and booleans."""
    renamed_keys(config, warn or (lambda text: sys.stderr.write("Warning: %s\n" % text)))
    return coerce_command_line_numbers(config)


def renamed_keys(config, warn):
    """The timing method ``timeit`` is also read under its other name ``hf2019`` (the era's):
    that spelling still works, as value of ``method`` and as the key of its settings, with a
    deprecation warning. A key whose meaning changed is refused with what replaced it."""
    if "max_canary_ratio" in (config.get("disturbance") or {}):
        raise PlanError("config key disturbance.max_canary_ratio (the canary over the job's "
                        "fastest) is replaced by disturbance.max_canary_score (the canary in "
                        "robust spreads above its median on this host, default 3.5): remove it")
    methods = as_list(config.get("method", []))
    if any(method in contract.RENAMED_METHODS for method in methods):
        warn("config key 'method': 'hf2019' is the old name of the timing method 'timeit' (the "
             "era is still called hf2019); it works, but write 'method: timeit'")
        new = []  # both spellings given name one method once
        for method in map(contract.method_name, methods):
            new += [method] if method not in new else []
        config["method"] = new if isinstance(config["method"], list) else new[0]
    if isinstance(config.get("hf2019"), dict):
        warn("config key 'hf2019' (the settings repeat and number) is now called 'timeit'")
        old = config.pop("hf2019")
        config["timeit"] = dict(old, **config.get("timeit", {}))
    return config


def coerce_command_line_numbers(config, lists=("batch_sizes", "sequence_lengths"),
                                mappings=("duel", "timeit", "training", "disturbance")):
    """Turn number strings into numbers, and true/false into booleans, where the schema expects
    them.

    ``snakemake --config 'batch_sizes=[1,2]' 'duel={min_samples: 5}' accept_drift=true`` parses
    lists and mappings with YAML's BaseLoader, which keeps every item a string, and may keep a
    plain value a string too; anything that is not a number or a boolean word is left as it is,
    for the schema to reject with its key and value.
    """
    for key in BOOLEAN_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip().lower() in BOOLEAN_WORDS:
            config[key] = BOOLEAN_WORDS[value.strip().lower()]
    for key in lists:
        if isinstance(config.get(key), list):
            config[key] = [_number(item) for item in config[key]]
    for key in mappings:
        if isinstance(config.get(key), dict):
            config[key] = dict(
                (name, [_number(item) for item in value] if isinstance(value, list)
                 else _number(value))
                for name, value in config[key].items()
            )
    return config


def task_grid(config, task):
    """(batch sizes, sequence lengths) a cell of ``task`` sweeps: training has its own grid
    (config key training), each list falling back to the inference grid's; generation's prompt
    lengths are the inference grid's lengths."""
    own = config.get("training", {}) if task == "training" else {}
    return (own.get("batch_sizes") or config["batch_sizes"],
            own.get("sequence_lengths") or config["sequence_lengths"])


def resolve_dir(config, key, default, checkout):
    """A folder from the config; relative paths are taken from the checkout."""
    folder = os.path.expanduser(config.get(key, default))
    return folder if os.path.isabs(folder) else os.path.join(checkout, folder)


def resolve_models_dir(config, checkout):
    return resolve_dir(config, "models_dir", "config/models", checkout)


def resolve_era_envs_dir(config, checkout):
    return resolve_dir(config, "era_envs_dir", ".era-envs", checkout)


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


def check_eras(config, checkout):
    """Every era needs a lock file; a built era needs a finished environment or its interpreter.

    Reads only: a stale environment (interrupted build, other lock file, interpreter gone)
    loses its marker when a real run's jobs are planned (eras.settle, from rules/common.smk),
    never while a dry run or a lint parses the workflow.
    """
    envs_dir = resolve_era_envs_dir(config, checkout)
    for era in config["eras"]:
        for device in config["devices"]:
            try:
                lock = era_envs.lock_file(checkout, era, device)
                own = era_envs.in_workflow_env(era, device, lock)
                if own or config.get("runner", "native") != "native":
                    continue
                prefix = era_envs.keyed_prefix(envs_dir, era, device, lock)
                if era_envs.stale_reason(prefix, lock):
                    era_envs.find_python(era_envs.required_python(lock))
            except era_envs.EraError as error:
                raise PlanError(str(error))


def gpu_present():
    """Whether an NVIDIA GPU answers on this machine."""
    return shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidiactl")


def check_devices(devices, has_gpu=gpu_present):
    """cuda cells run only where an NVIDIA GPU answers (the cells then check that their
    framework build sees it too, and fail loudly if not). Called for each job that runs on this
    machine: jobs sent to a cluster are checked on their node, by the cell."""
    if "cuda" in devices and not has_gpu():
        raise PlanError(
            "config key 'devices': device 'cuda' cannot run here: this machine has no NVIDIA "
            "GPU (no nvidia-smi / /dev/nvidiactl). Use devices: [cpu], or run the cuda cells "
            "on a GPU machine (the SLURM profile can send them to one)."
        )


def check_slurm_controller(run=subprocess.run):
    """The SLURM executor submits every job with sbatch: without a controller that answers, each
    job would fail at submission after a long wait, one message per job. ``scontrol ping`` asks
    the controller of SLURM_CONF (or the system's) at once."""
    if shutil.which("scontrol") is None:
        raise PlanError("the slurm executor needs SLURM's client commands (sbatch, squeue, "
                        "scontrol) on PATH: run Snakemake on a node that can submit jobs")
    try:
        answer = run(["scontrol", "ping"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     universal_newlines=True, timeout=60)
        said, failed = answer.stdout, answer.returncode != 0 or "DOWN" in answer.stdout
    except subprocess.TimeoutExpired:
        said, failed = "no answer within 60 s", True
    if failed:
        first = next((line.strip() for line in said.splitlines() if line.strip()), "")
        raise PlanError("the slurm executor needs a SLURM controller that answers, and "
                        "`scontrol ping` says: %s (SLURM_CONF=%s). Start or reach the "
                        "controller, then run the same command again."
                        % (first, os.environ.get("SLURM_CONF", "unset")))


def image_jobs(config):
    """(era, device) of every image the jobs need: each cell's, and the CPU one for references."""
    devices = ["cpu"] + [device for device in config["devices"] if device != "cpu"]
    return [(era, device) for era in config["eras"] for device in devices]


def _image(config, checkout, era, device, runner):
    try:
        return images.image_for(config, checkout, era, device, runner)
    except images.ImageError as error:
        raise PlanError("config key 'runner': runner %s, era %s, device %s: %s"
                        % (runner, era, device, error))


def _missing(config, checkout, era, device, runner, name, where):
    if (config.get("images") or {}).get(images.image_key(era, device)):
        what_to_do = ("build or fetch it, or change config key 'images' (%s)"
                      % images.image_key(era, device))
    else:
        what_to_do = images.build_hint(era, device, runner)
    return PlanError("config key 'runner': runner %s needs image %s (era %s, device %s), which "
                     "is not %s; %s" % (runner, name, era, device, where, what_to_do))


def check_docker(config, checkout):
    """The engine answers and has every image the jobs will run in."""
    problem = images.engine_problem()
    if problem:
        raise PlanError(
            "config key 'runner': runner docker needs a running Docker engine, and %s. Start "
            "it (e.g. `systemctl start docker`, or dockerd by hand as in containers/README.md; "
            "DOCKER_HOST names its socket), or use runner: native." % problem)
    for era, device in image_jobs(config):
        name = _image(config, checkout, era, device, "docker")
        try:
            found = images.image_id(name)
        except images.ImageError as error:
            raise PlanError("config key 'runner': runner docker: %s" % error)
        if found is None:
            raise _missing(config, checkout, era, device, "docker", name, "in the Docker engine")


def check_apptainer(config, checkout, enabled):
    """Snakemake runs the jobs in their container: images, and every local .sif exists."""
    if not enabled:
        raise PlanError(
            "config key 'runner': runner apptainer runs each job in its rule's container: image, "
            "which Snakemake does only with `--sdm apptainer` (and --apptainer-args=--nv "
            "for cuda cells); add it, or use runner: native or docker.")
    for era, device in image_jobs(config):
        name = _image(config, checkout, era, device, "apptainer")
        if "://" not in name and not os.path.isfile(name):
            raise _missing(config, checkout, era, device, "apptainer", name, "a file")


def check_runner(config, checkout, apptainer_enabled=False):
    runner = config.get("runner", "native")
    if runner == "docker":
        check_docker(config, checkout)
    elif runner == "apptainer":
        check_apptainer(config, checkout, apptainer_enabled)


def check_modes(frameworks, modes):
    for framework in frameworks:
        if not modes.get(framework):
            raise PlanError(
                "config key 'modes': no mode listed for framework %r (e.g. modes: {%s: [eager]})"
                % (framework, framework)
            )


def plan_cells(config, checkout, apptainer_enabled=False, probe=True):
    """Every cell of the config (a process each: the modes that share one, modes.process_groups,
    in one cell), in a stable order; raises PlanError for what cannot run.

    Devices are checked per job (check_devices): whether a job runs here or on a cluster node
    is known only then. ``apptainer_enabled``: Snakemake runs with ``--sdm apptainer`` (needed
    by runner apptainer). ``probe``: check the eras' interpreters and the runner's engine and
    images; False for a job's own re-parse (on a SLURM node, say), which the main invocation
    has planned already.
    """
    if probe:
        check_eras(config, checkout)
    check_modes(config["frameworks"], config["modes"])
    check_models(config["models"], resolve_models_dir(config, checkout))
    try:  # before the runner's checks: with docker or apptainer this is the reason to give
        deployment.check(config)
    except deployment.DeploymentError as error:
        raise PlanError(str(error))
    if probe:
        check_runner(config, checkout, apptainer_enabled)
    check_plan_size(count_plan(config), config.get("max_jobs", DEFAULT_MAX_JOBS))
    return [
        Cell(era, device, framework, modes.joined(group), precision, task, model, replicate)
        for replicate in range(1, processes_per_cell(config) + 1)
        for era in config["eras"]
        for device in config["devices"]
        for framework in config["frameworks"]
        for task in config.get("tasks", ["inference"])
        for group in modes.process_groups(framework, [
            mode for mode in config["modes"][framework]
            if not era_envs.lacks(checkout, era, framework, mode, device, task)])
        for precision in config.get("precisions", ["fp32"])
        for model in config["models"]
    ]


def _lacked(config, checkout):
    return [(era, device, framework, mode, task, reason)
            for era in config["eras"] for device in config["devices"]
            for framework in config["frameworks"] for mode in config["modes"][framework]
            for task in config.get("tasks", ["inference"])
            for reason in [era_envs.lacks(checkout, era, framework, mode, device, task)]
            if reason]


def lacking(config, checkout):
    """A line per era, device and mode of the config that its era lacks (envs/eras.yaml):
    plan_cells launches no cell of them; and a line per model whose FLOPs are not counted
    (flops.not_counted): its points' flops stay empty."""
    specs = check_models(config["models"], resolve_models_dir(config, checkout))
    lines = list(dict.fromkeys(lacked[-1] for lacked in _lacked(config, checkout)))
    return ["%s: no cell planned" % line for line in lines] + [
        "model %s: %s: its flops and achieved_gflops stay empty" % (name, flops.not_counted(spec))
        for name, spec in sorted(specs.items()) if flops.not_counted(spec)]


def lacking_rows(config, checkout):
    """The ``skipped`` rows the merge gives the points of the cells an era lacks (one process
    each, every point, method and task), with the reason."""
    rows = []
    for era, device, framework, mode, task, reason in _lacked(config, checkout):
        path = era_envs.lock_file(checkout, era, device)
        lock, lock_sha256 = os.path.relpath(path, checkout), era_envs.lock_sha256(path)
        batch_sizes, lengths = task_grid(config, task)
        for precision in config.get("precisions", ["fp32"]):
            for model in config["models"]:
                for batch in batch_sizes:
                    for length in lengths:
                        for method in as_list(config["method"]):
                            row = contract.empty_row()
                            row.update(era=era, device=device, framework=framework,
                                       mode=mode, precision=precision, task=task,
                                       model=model, replicate=1, batch_size=batch,
                                       seq_len=length, method=method, status="skipped",
                                       message=reason, attempt=1, counted=True,
                                       lock_file=lock, lock_sha256=lock_sha256)
                            rows.append(row)
    return rows


def max_replicates(config):
    """The most processes a cell's point may get: config max_replicates, never fewer than
    replicates (then no point gets more)."""
    replicates = processes_per_cell(config)
    return max(replicates, config.get("max_replicates") or replicates)


def shard_path(cell):
    return layout.SHARD_PATTERN.format(**cell._asdict())


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


def estimate_mem_mb(spec, batch_size, seq_len, training=False):
    """A generous memory estimate for a cell (MB), for schedulers: weights, activations, runtime.

    The weights are counted three times over (model, framework copies, autograd in timeit
    mode), the activations as 30 hidden-sized tensors per layer, plus 2 GB for the runtime
    itself. Training adds gradients and Adam's two moments (three more copies of the weights)
    and keeps every activation for the backward pass (counted twice).
    """
    hidden, layers, vocab = sizes(spec)
    weights = parameters(spec)
    activations = 30 * layers * batch_size * seq_len * hidden
    if training:
        weights, activations = 2 * weights, 2 * activations + batch_size * seq_len * vocab
    return int(2048 + (3 * weights + activations) * 4 / 2**20)


# How many jobs one run may plan unless config key max_jobs says more: far above any grid in
# config/, far below what makes Snakemake's planning take minutes and gigabytes.
DEFAULT_MAX_JOBS = 5000

PlanSize = collections.namedtuple("PlanSize", "cells replicates jobs references exports points")


def count_plan(config):
    """Jobs and points a config makes at most, counted before any cell or job exists: cells (a
    process each, modes.process_groups) x max_replicates, one reference per era, model and kind
    of weights, one export per deployed artifact, and every point (batch sizes x lengths x
    methods x modes) of every cell process."""
    listed = [config["modes"].get(framework, []) for framework in config["frameworks"]]
    processes = sum(len(modes.process_groups(framework, names))
                    for framework, names in zip(config["frameworks"], listed))
    tasks = config.get("tasks", ["inference"])
    per_mode = len(config["eras"]) * len(config["devices"]) * \
        len(config.get("precisions", ["fp32"])) * len(config["models"])
    per_task = per_mode * sum(len(names) for names in listed)
    replicates = max_replicates(config)  # at most: settling rounds measure only open points
    methods = len(as_list(config.get("method", ["duel"])))
    points = 0
    for task in tasks:
        batch_sizes, lengths = task_grid(config, task)
        points += per_task * replicates * len(batch_sizes) * len(lengths) * methods
    references = len(config["eras"]) * len(config["models"]) * len(set(tasks))
    exports = len(config["eras"]) * len(config["devices"]) * \
        len(deployment.artifact_formats(config)) * len(config["models"])
    cells = per_mode * processes * len(tasks)
    jobs = cells * replicates + references + exports
    return PlanSize(cells, replicates, jobs, references, exports, points)


def check_plan_size(size, limit):
    """Refuse a plan of more jobs than ``limit`` before Snakemake builds its graph (a typo such
    as replicates=100000 would otherwise plan for minutes in gigabytes of memory)."""
    if size.jobs > limit:
        raise PlanError(
            "this config makes %d jobs (%d cells x %d replicates, %d references, %d exports; "
            "%d points), more than config key 'max_jobs' allows (%d): shrink the grid or "
            "replicates, or raise max_jobs if you mean it"
            % (size.jobs, size.cells, size.replicates, size.references, size.exports,
               size.points, limit))


# What a run writes besides weights: a shard row holds every sample (8 bytes each) and about
# 2 KB of identity, outcome and environment columns.
ROW_BYTES = 2048
SAMPLE_BYTES = 8
WEIGHT_BYTES = 4  # fp32


def estimate_disk_bytes(config, specs, results_dir):
    """What the run will write under ``results_dir`` that is not there yet, in bytes, by part:
    the references (each model's weights in both frameworks, once per era and kind), the
    exported artifacts (a TorchScript file per shape, one SavedModel), and the shards."""
    tasks = sorted(set(config.get("tasks", ["inference"])))
    references = 0
    for era in config["eras"]:
        for model, spec in specs.items():
            for task in tasks:
                manifest = layout.reference(era, model, layout.WEIGHTS_OF_TASK[task],
                                            results_dir)
                if not os.path.exists(manifest):
                    references += 2 * parameters(spec) * WEIGHT_BYTES
    batch_sizes, lengths = task_grid(config, "inference")
    artifacts = 0
    for mode_format in deployment.artifact_formats(config):
        copies = len(batch_sizes) * len(lengths) if mode_format == "torchscript" else 1
        artifacts += sum(copies * parameters(spec) * WEIGHT_BYTES for spec in specs.values()) * \
            len(config["eras"]) * len(config["devices"])
    samples = config["duel"]["max_samples"] if "duel" in as_list(config["method"]) else 0
    samples = max(samples, config.get("timeit", {}).get("repeat", 0))
    shards = count_plan(config).points * (ROW_BYTES + SAMPLE_BYTES * samples)
    return collections.OrderedDict(
        [("references", references), ("artifacts", artifacts), ("shards", shards)])


def _existing(path):
    folder = os.path.abspath(path)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    return folder


def check_disk(config, checkout, results_dir=layout.RESULTS, store=None):
    """Refuse, before any job of a real run (a dry run writes nothing), a run whose disk cannot
    hold what it will write: its results, and the store's copy of its shards (``store``: the
    store's folder; on another disk, that disk is checked for the copy)."""
    parts = estimate_disk_bytes(
        config, check_models(config["models"], resolve_models_dir(config, checkout)), results_dir)
    disks = [(_existing(results_dir), os.path.abspath(results_dir), parts)]
    if store is not None:
        copy = collections.OrderedDict([("the store's copy of the shards", parts["shards"])])
        if os.stat(_existing(store)).st_dev == os.stat(disks[0][0]).st_dev:
            parts.update(copy)
        else:
            disks.append((_existing(store), os.path.abspath(store), copy))
    for folder, where, needed_parts in disks:
        free = shutil.disk_usage(folder).free
        needed = sum(needed_parts.values())
        if needed > free:
            raise PlanError(
                "this run would write about %s under %s (%s), and that disk has %s free: free "
                "space there, or run a smaller grid"
                % (_size(needed), where, ", ".join("%s %s" % (name, _size(value))
                                                   for name, value in needed_parts.items()),
                   _size(free)))


def _size(count):
    return "%.1f GB" % (count / 1e9) if count >= 1e9 else "%.1f MB" % (count / 1e6)
