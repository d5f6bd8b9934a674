"""The data contract: the columns of a shard, their Arrow types and their order.

One row per point. The merge and every report read only these columns, so the schema is declared
once here and every shard is written with it (a shard whose points all failed still has typed,
all-null timing columns, and shards concatenate without type drift).
"""
from collections import namedtuple

import pyarrow as pa

# A cell's identity, defined once: the shard and log paths (host layout.cell_pattern), the
# planned cells, the sweep's rows and the merge's groups all follow this tuple, so a new
# dimension is one entry here (and its wildcard constraint in rules/common.smk).
# ``replicate`` numbers the separate processes that run the same cell (config key replicates);
# every replicate uses the same seed, weights and inputs. A planned cell's ``mode`` names the
# modes its process measures (modes.joined: 'eager+function'); each row holds its own mode.
CELL_KEYS = ("era", "device", "framework", "mode", "precision", "task", "model", "replicate")
Cell = namedtuple("Cell", CELL_KEYS)
# A point of a cell (one row of its shard).
POINT_KEYS = ("batch_size", "seq_len", "method")

# The timing methods (timing.py). ``timeit`` is the 2019 script's timeit.repeat loop and reports
# the mean per call, as 2019 did; every other method reports the median of its samples. The
# method's other name, ``hf2019`` (the era's), is read as ``timeit`` in configs and shards
# (method_name).
METHODS = ("duel", "timeit")
RENAMED_METHODS = {"hf2019": "timeit"}


def method_name(method):
    """A method's name, its old spelling translated: 'hf2019' -> 'timeit'."""
    return RENAMED_METHODS.get(method, method)


def reported_statistic(method):
    """The column a method reports per point: 'mean' (timeit, as 2019) or 'median'."""
    return "mean" if method_name(method) == "timeit" else "median"

IDENTITY = [
    ("era", pa.string()),
    ("device", pa.string()),
    ("framework", pa.string()),
    ("mode", pa.string()),
    ("precision", pa.string()),  # fp32, fp16, bf16 (adapters/base.py: how each is run)
    ("task", pa.string()),
    ("model", pa.string()),
    ("replicate", pa.int64()),  # which process of the cell (1..replicates); older shards: 1
    ("batch_size", pa.int64()),
    ("seq_len", pa.int64()),
    ("method", pa.string()),
]
OUTCOME = [
    ("status", pa.string()),  # STATUSES
    ("message", pa.string()),
]
# A job runs its cell in a fresh process; a point disturbed there is measured again in the same
# process (sweep.py), then in another process (duel/cell/commands/run_cell.py): every row is kept, and
# only each point's last one counts.
ATTEMPT = [
    ("attempt", pa.int64()),  # which process of the job measured the row: 1, 2, ...
    ("remeasure", pa.int64()),  # 0, then 1, 2, ... for a point measured again in that process
    ("disturbed", pa.string()),  # why the point counts as disturbed (conditions.disturbance)
    ("disturbance_rule", pa.string()),  # the rule that judged it (conditions.RULE)
    ("counted", pa.bool_()),  # the row the statistics use (false: a disturbed row run again)
    # the modes that shared that process, joined by '+' (modes.process_groups); older shards:
    # null (a process measured one mode)
    ("process_modes", pa.string()),
    ("startup_s", pa.float64()),  # that process from its start to its first point (imports, build)
    ("job_wall_s", pa.float64()),  # the whole job, every attempt, from its start to its shard
]
TIMING = [
    ("samples", pa.list_(pa.float64())),  # every timed value, milliseconds per call
    ("n_samples", pa.int64()),
    ("mean", pa.float64()),
    ("median", pa.float64()),
    ("std", pa.float64()),
    ("min", pa.float64()),
    ("max", pa.float64()),
    ("p90", pa.float64()),
    ("warmup_calls", pa.int64()),
    ("repeat", pa.int64()),  # timeit only: timeit's repeat
    ("number", pa.int64()),  # timeit only: calls per repeat
    ("point_wall_s", pa.float64()),  # wall time of the whole point, warm-up included
    ("setup_s", pa.float64()),  # one-off preparation before the first call (e.g. jit.trace)
    ("first_call_ms", pa.float64()),  # the untimed first call (tracing, compiling included)
    ("gc_collections", pa.int64()),  # garbage collections inside the duel samples (conditions)
    ("canary_before_ms", pa.float64()),  # the fixed canary workload just before the point...
    ("canary_after_ms", pa.float64()),  # ...and just after it (conditions.canary_ms)
    ("canary_score", pa.float64()),  # the slower of the two in robust spreads above the median
    ("canary_center_ms", pa.float64()),  # the median of the readings it was judged against
    ("canary_spread", pa.float64()),  # their robust spread, log scale (conditions.canary_spread)
    ("canary_calibration_ms", pa.list_(pa.float64())),  # the process's calibration readings
    ("steal_ms", pa.float64()),  # the host's steal time on the point's CPUs during the point
    ("other_cpu_ms", pa.float64()),  # other processes' CPU time there (conditions.CpuWatch)
    ("marked_samples", pa.list_(pa.float64())),  # samples left out of the figure (SampleWatch)
    ("kept_steal_ms", pa.float64()),  # steal during the samples kept (null: none judged)
    ("kept_other_cpu_ms", pa.float64()),  # other processes' CPU time during them
    ("planned_samples", pa.int64()),  # the samples the point was sized for (timing.py)
    ("point_cost_s", pa.float64()),  # its fixed cost: first call, warm-up, share of start-up
]
MEMORY = [
    ("peak_host_rss_mb", pa.float64()),
    ("peak_host_rss_method", pa.string()),
    ("peak_device_mb", pa.float64()),  # the framework allocator's peak, reset per point
    ("peak_device_method", pa.string()),
]
CHECK = [
    ("max_abs_diff", pa.float64()),  # |final hidden state - PyTorch eager reference|, max
    ("diff_tolerance", pa.float64()),  # beyond it the point is an error (reference.py)
]
TRAINING = [  # task training only (sweep.py): the loss on the point's batch around its steps
    ("loss_start", pa.float64()),
    ("loss_end", pa.float64()),
    ("train_steps", pa.int64()),  # optimiser steps the point took, warm-up included
    ("learning_rate", pa.float64()),
]
GENERATION = [  # task generation only (sweep.py, timing.generation_split; docs/method.md)
    ("new_tokens", pa.int64()),  # tokens each call generates after the prompt (samples: whole)
    ("first_token_samples", pa.list_(pa.float64())),  # every one-token call, milliseconds
    ("first_token_first_call_ms", pa.float64()),  # that call's untimed first call
    ("first_token_ms", pa.float64()),  # time to first token: their median (the prefill)
    ("per_token_ms", pa.float64()),  # time per output token after it (the decode)
    ("tokens_per_s", pa.float64()),  # batch x new tokens / the whole call's median
    ("tokens_agree", pa.int64()),  # leading tokens equal to PyTorch eager's in every row
    ("token_margin", pa.float64()),  # its top-2 logit gap where they first differ (reference.py)
    ("token_tolerance", pa.float64()),  # the gap within which a first divergence is rounding
]
DEPLOYMENT = [  # deployment modes only (adapters/deployed.py says how each is measured)
    ("artifact_bytes", pa.int64()),  # size on disk of the exported artifact the point ran
    ("export_s", pa.float64()),  # wall time of that artifact's export
    ("artifact_load_ms", pa.float64()),  # the runtime's load call alone
    ("load_ms", pa.float64()),  # cold start: C/C++ process start (Python: load) to first output
    ("runtime", pa.string()),  # e.g. libtorch, tensorflow-c, torch.jit (Python)
    ("runtime_version", pa.string()),
]
GRAPH = [  # mode compile (adapters/pytorch.py): what torch.compile did during the point
    ("compiles", pa.int64()),  # graphs Dynamo compiled (a static graph per point: 1)
    ("recompiles", pa.int64()),  # of those, compiled after the point's first call (0)
    ("graph_breaks", pa.int64()),
]
WORK = [
    ("flops", pa.float64()),
    ("achieved_gflops", pa.float64()),
]
ENVIRONMENT = [
    ("python", pa.string()),
    ("framework_version", pa.string()),
    ("framework_build", pa.string()),  # what the framework was built with, JSON (builds.py)
    ("transformers_version", pa.string()),
    ("numpy_version", pa.string()),
    ("pyarrow_version", pa.string()),
    ("cuda", pa.string()),
    ("cudnn", pa.string()),
    # TF32 for fp32 matrix products as the framework reports its switches: on, off, or n/a (a
    # CPU, or an era without the switch); config key tf32 sets it (adapters/base.py).
    ("tf32", pa.string()),
    ("device_name", pa.string()),
    ("gpu_driver", pa.string()),
    ("cpu_model", pa.string()),
    ("cpu_flags", pa.string()),  # the vector extensions that set the CPU's peak FLOP/s
    ("cpu_max_mhz", pa.float64()),
    ("logical_cpus", pa.int64()),
    ("threads", pa.int64()),
    ("cpu_affinity", pa.string()),  # the CPUs the process was bound to (cpuset notation)
    ("omp_binding", pa.string()),  # OpenMP thread placement (conditions.py)
    ("gc_policy", pa.string()),  # what the garbage collector did while duel took samples
    ("hostname", pa.string()),
    ("platform", pa.string()),
    ("runner", pa.string()),
    ("image", pa.string()),
    ("image_digest", pa.string()),
    ("git_commit", pa.string()),
    ("config_sha256", pa.string()),
    ("started_at", pa.string()),
    ("seed", pa.int64()),
    # Where a SLURM job ran the cell (empty outside SLURM): environment.slurm_columns.
    ("slurm_job_id", pa.string()),
    ("slurm_cluster", pa.string()),
    ("slurm_partition", pa.string()),
    ("slurm_node", pa.string()),
    ("slurm_cpus_per_task", pa.int64()),
    ("slurm_cpus_on_node", pa.int64()),
    ("slurm_mem_mb", pa.int64()),
    ("slurm_gpus", pa.string()),
    # The software as installed (environment.lock_columns, duel/cell/locks.py): the lock file the
    # environment was built from and its SHA-256, the SHA-256 of the installed set (normalised
    # name==version lines), whether the two agree exactly, what differs if not, and whether the
    # run was told to accept a drifted workflow environment (config key accept_drift).
    ("lock_file", pa.string()),
    ("lock_sha256", pa.string()),
    ("installed_sha256", pa.string()),
    ("lock_match", pa.bool_()),
    ("lock_drift", pa.string()),
    ("drift_accepted", pa.bool_()),
]

COLUMNS = (IDENTITY + OUTCOME + ATTEMPT + TIMING + MEMORY + CHECK + TRAINING + GENERATION + GRAPH
           + DEPLOYMENT + WORK + ENVIRONMENT)
SCHEMA = pa.schema([pa.field(name, kind) for name, kind in COLUMNS])
NAMES = [name for name, _ in COLUMNS]


def first_line(text):
    """The first line of ``text`` with surrounding blank lines dropped, or "" when it has none:
    a message shown in one line, whatever else it holds."""
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def error_line(error):
    """The ``message`` of a failed point (and of any error said in one line): the exception's
    type and the first line of its text; the traceback goes to the log."""
    return "%s: %s" % (type(error).__name__, first_line(error))


# A point's outcome; all but the first two are failures: killed (its measuring process ended by
# a signal mid-point) and timeout (stopped past its time limit) as the others.
STATUSES = ("ok", "skipped", "error", "oom", "killed", "timeout")
FAILED = ("error", "oom", "killed", "timeout")


def empty_row():
    """A row with every contract column present and unset (None)."""
    return dict((name, None) for name in NAMES)
