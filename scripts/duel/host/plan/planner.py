"""From a validated config to the list of cells this machine will run, or a clear refusal.

The JSON schema catches wrong types, unknown keys and unsafe names; planning checks what a
schema cannot: that every model has an architecture file (or a save_pretrained folder) of a
model type transformers builds in both frameworks (model_files), that each requested era has an
environment and each device exists here, and that a docker or apptainer runner has its engine
and every image it will need (probes), and that the plan is not too large (cost). Every refusal
names the key and the bad value, and happens while Snakemake plans, before any job starts.
"""
import os

from duel.cell import contract, flops, modes

from duel.host.plan import deployment, layout
from duel.host.plan.config_keys import PlanError, as_list, processes_per_cell, \
    resolve_models_dir, task_grid
from duel.host.plan.cost import DEFAULT_MAX_JOBS, check_plan_size, count_plan
from duel.host.plan.model_files import check_models
from duel.host.plan.probes import check_eras, check_runner
from duel.host.stacks import eras as era_envs

Cell = contract.Cell


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


def shard_path(cell):
    return layout.SHARD_PATTERN.format(**cell._asdict())
