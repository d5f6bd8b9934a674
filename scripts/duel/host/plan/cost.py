"""What a config will cost, counted before any job exists: its jobs and points (refused past
config key max_jobs), a cell's memory for schedulers, and the disk a run will fill (refused
where the disk cannot hold it).
"""
import collections
import os
import shutil

from duel.cell import modes

from duel.host.plan import deployment, layout
from duel.host.plan.config_keys import PlanError, as_list, max_replicates, resolve_models_dir, \
    task_grid
from duel.host.plan.model_files import check_models, parameters, sizes

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
