"""What a job asks a cluster scheduler for: its cores and its walltime (memory: cost).

A walltime that is too short kills a cell in the middle of its sweep; one that is too long only
waits longer in the queue. So the estimate is generous, from the grid the cell sweeps: a start-up
allowance and each point's pessimistic estimate (duel/cell/estimate.py, which also sets a
point's time limit).
Where it is still too short for a cluster, ``--set-resources run_cell:runtime=MINUTES`` wins.
"""
import math

from duel.cell import flops
from duel.cell.estimate import POINT_S, call_seconds, point_seconds

from duel.host.plan.config_keys import PlanError

STARTUP_S = 600.0  # imports, model build, weights: minutes on a busy shared file system
MARGIN = 1.5


def timing_threads(cell_threads, non_local, local_cores):
    """Cores a timing job (a cell, a reference) takes and times with.

    ``cell_threads`` from the config if set; else, on one machine, every core Snakemake may use
    (``local_cores()``), so no two timing jobs ever share cores. A job sent to a cluster must ask
    for a number the scheduler can give it, so there it must be set.
    """
    if cell_threads:
        return cell_threads
    if non_local:
        raise PlanError(
            "config key 'cell_threads' is required when jobs are submitted to a cluster: the "
            "whole cores each cell asks for and times with, e.g. --config cell_threads=16"
        )
    return local_cores()


def lengths_that_run(spec, sequence_lengths):
    """Points longer than the model's maximum are skipped without a call."""
    limit = spec.max_sequence_length
    return [length for length in sequence_lengths if limit is None or length <= limit]


def to_minutes(seconds):
    return int(math.ceil(MARGIN * seconds / 60.0))


def cell_runtime_min(spec, batch_sizes, sequence_lengths, methods, duel, timeit, threads,
                     task="inference", measurements=1):
    """Walltime (minutes) for a cell sweeping every batch size x length x method of its task's
    own grid (config_keys.task_grid); a training call is a whole step (flops.point_flops: about three
    forward passes, the language-modelling head included). ``measurements``: how many times a
    point may be measured at most (a disturbed point is measured again), each counted as a whole
    sweep."""
    total = STARTUP_S
    for batch in batch_sizes:
        for length in lengths_that_run(spec, sequence_lengths):
            call_s = call_seconds(flops.point_flops(spec, task, batch, length), threads)
            total += sum(point_seconds(call_s, method, duel, timeit) for method in methods)
    return to_minutes(total * measurements)


def reference_runtime_min(spec, sequence_lengths, threads):
    """Walltime (minutes) for a model's reference: build, convert, one call per length."""
    total = STARTUP_S
    for length in lengths_that_run(spec, sequence_lengths):
        total += POINT_S + call_seconds(flops.forward_flops(spec, 1, length), threads)
    return to_minutes(total)
