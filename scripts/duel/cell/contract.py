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

# How the processes of one point pool a column into the point table (tables/replicates.py),
# each with the words the spreadsheet and results/README.md say it in.
KEY, PROCESS, WORST, LARGEST, MEDIAN_OF = "key", "process", "worst", "largest", "median"
SAMPLES, AGREED, DERIVED, OWN_ROW = "samples", "agreed", "derived", "own row"
POOLS = {
    KEY: "a key of the point: the same in every process",
    PROCESS: "names the process: the point has a row over them all (replicates: how many)",
    WORST: "the worst status of the processes, with that process's message",
    LARGEST: "the largest of the processes' values",
    MEDIAN_OF: "the median of the processes' values",
    SAMPLES: "of every process's samples pooled (the figure: duel, the median of the process "
             "medians; timeit, the mean of every sample)",
    AGREED: "one value where the processes agree, else the first process's (text: each, "
            "joined by '; ')",
    DERIVED: "made again from the pooled figure",
    OWN_ROW: "a row's own list, not pooled (the long sheet keeps each process's)",
}
# Where a column shows besides the spreadsheet's long sheet (which shows every one).
INDEX, SITE, CHART, TABLE = "index", "site", "chart", "table"
PLACES = {
    INDEX: "the store's index (duel history and trend ask it without reading shards)",
    SITE: "the published site (what it judges a run by)",
    CHART: "a chart",
    TABLE: "a spreadsheet sheet's own table",
}

# A column: its name, Arrow type, unit ("" for a name, a flag or text), how a point's processes
# pool it, where it shows and what it means (results/README.md is written from these).
Column = namedtuple("Column", "name type unit pool shows meaning")


def column(name, kind, unit, pool, meaning, shows=()):
    return Column(name, kind, unit, pool, tuple(shows), meaning)


def _key(name, kind, meaning, shows=(INDEX, SITE)):
    return column(name, kind, "", KEY, meaning, shows)


IDENTITY = [
    _key("era", pa.string(), "the software stack (envs/eras.yaml)"),
    _key("device", pa.string(), "cpu or cuda"),
    _key("framework", pa.string(), "pytorch or tensorflow"),
    _key("mode", pa.string(), "how the framework ran the model (cell/modes.py)"),
    _key("precision", pa.string(), "fp32, fp16 or bf16 (adapters/base.py: how each is run)"),
    _key("task", pa.string(), "inference, training or generation"),
    _key("model", pa.string(), "a config/models entry or a save_pretrained folder"),
    column("replicate", pa.int64(), "", PROCESS,
           "which process of the cell (1..replicates); every process has the same seed, weights "
           "and inputs", (INDEX, SITE)),
    _key("batch_size", pa.int64(), "sequences per call"),
    _key("seq_len", pa.int64(), "tokens per sequence (generation: the prompt)"),
    _key("method", pa.string(), "duel, or timeit (the 2019 script's loop)"),
]
OUTCOME = [
    column("status", pa.string(), "", WORST,
           "ok, skipped, or a failure: error, oom, killed (the measuring process ended by a "
           "signal during the point), timeout (stopped past point_time_limit)", (INDEX, SITE)),
    column("message", pa.string(), "", WORST, "the error text or the skip reason", (SITE,)),
]
# A job runs its cell in a fresh process; a point disturbed there is measured again in the same
# process (sweep.py), then in another process (duel/cell/commands/run_cell.py): every row is kept,
# and only each point's last one counts.
ATTEMPT = [
    column("attempt", pa.int64(), "", AGREED,
           "which process of the job measured the row: 1, then the processes that ran disturbed "
           "points again", (INDEX, SITE)),
    column("remeasure", pa.int64(), "", AGREED,
           "0, or which measurement again inside that process"),
    column("disturbed", pa.string(), "", AGREED,
           "why the point counts as disturbed (conditions.disturbance)", (SITE,)),
    column("disturbance_rule", pa.string(), "", AGREED,
           "the rule that judged it: canary-score, or canary-ratio for rows judged by their "
           "canary over the job's fastest"),
    column("counted", pa.bool_(), "", AGREED,
           "whether the statistics use the row (only each point's last)", (INDEX, SITE)),
    column("process_modes", pa.string(), "", AGREED,
           "the modes that shared that process, joined by + (modes.process_groups; a shard and "
           "its log are named by them); empty where a process measured one mode"),
    column("startup_s", pa.float64(), "s", MEDIAN_OF,
           "that process from its start to its first point (imports, model build, weights)"),
    column("job_wall_s", pa.float64(), "s", MEDIAN_OF,
           "the whole job, every attempt, from its start to its shard"),
]
TIMING = [
    column("samples", pa.list_(pa.float64()), "ms", OWN_ROW,
           "every timed value, per call (training: per step)", (SITE,)),
    column("n_samples", pa.int64(), "", SAMPLES, "how many samples", (INDEX, SITE)),
    column("mean", pa.float64(), "ms", SAMPLES,
           "their mean; timeit's is the 2019 figure", (INDEX, SITE, CHART)),
    column("median", pa.float64(), "ms", SAMPLES,
           "their median; duel's figure (pooled: the median of the process medians)",
           (INDEX, SITE, CHART)),
    column("std", pa.float64(), "ms", SAMPLES, "their standard deviation (ddof=1)", (SITE,)),
    column("min", pa.float64(), "ms", SAMPLES, "the fastest sample", (SITE,)),
    column("max", pa.float64(), "ms", SAMPLES, "the slowest sample", (SITE,)),
    column("p90", pa.float64(), "ms", SAMPLES, "their 90th percentile", (SITE,)),
    column("warmup_calls", pa.int64(), "", AGREED, "untimed calls before the samples"),
    column("repeat", pa.int64(), "", AGREED, "timeit only: timeit's repeat"),
    column("number", pa.int64(), "", AGREED, "timeit only: calls per repeat"),
    column("point_wall_s", pa.float64(), "s", MEDIAN_OF,
           "wall time of the whole point, warm-up included"),
    column("setup_s", pa.float64(), "s", MEDIAN_OF,
           "one-off preparation before the first call (e.g. jit.trace)"),
    column("first_call_ms", pa.float64(), "ms", MEDIAN_OF,
           "the untimed first call (tracing, compiling included)"),
    column("gc_collections", pa.int64(), "", LARGEST,
           "garbage collections inside the duel samples (conditions.py)"),
    column("canary_before_ms", pa.float64(), "ms", MEDIAN_OF,
           "the fixed canary workload timed just before the point"),
    column("canary_after_ms", pa.float64(), "ms", MEDIAN_OF, "...and just after it"),
    column("canary_score", pa.float64(), "", AGREED,
           "the faster of the two canaries in robust spreads above the median of the process's "
           "readings before it"),
    column("canary_center_ms", pa.float64(), "ms", AGREED,
           "the median of the readings it was judged against"),
    column("canary_spread", pa.float64(), "", AGREED,
           "their robust spread: 1.4826 median absolute deviations of the logs"),
    column("canary_calibration_ms", pa.list_(pa.float64()), "ms", OWN_ROW,
           "the process's calibration readings"),
    column("steal_ms", pa.float64(), "ms", MEDIAN_OF,
           "the host's steal time on the point's CPUs during the point (/proc/stat)"),
    column("other_cpu_ms", pa.float64(), "ms", MEDIAN_OF,
           "other processes' CPU time there (conditions.CpuWatch)"),
    column("marked_samples", pa.list_(pa.float64()), "ms", OWN_ROW,
           "duel: samples left out of the figure because the host surely stole, or other "
           "processes surely used, more than their share of the CPUs while each ran"),
    column("kept_steal_ms", pa.float64(), "ms", MEDIAN_OF,
           "steal during the samples kept (empty: none judged)"),
    column("kept_other_cpu_ms", pa.float64(), "ms", MEDIAN_OF,
           "other processes' CPU time during them"),
    column("planned_samples", pa.int64(), "", MEDIAN_OF,
           "duel: the samples the point was sized for (Kalibera and Jones: its fixed cost "
           "against a call's, and duel.noise_ratio)"),
    column("point_cost_s", pa.float64(), "s", MEDIAN_OF,
           "that fixed cost: first call, warm-up, its share of the process's start-up"),
]
MEMORY = [
    column("peak_host_rss_mb", pa.float64(), "MiB", LARGEST,
           "peak host memory of the point (RSS)", (CHART, TABLE)),
    column("peak_host_rss_method", pa.string(), "", AGREED, "how it was measured"),
    column("peak_device_mb", pa.float64(), "MiB", LARGEST,
           "peak device memory of the point (the framework's allocator, reset per point)",
           (CHART, TABLE)),
    column("peak_device_method", pa.string(), "", AGREED, "how it was measured"),
]
CHECK = [
    column("max_abs_diff", pa.float64(), "", LARGEST,
           "|final hidden state - PyTorch eager's on the same weights|, largest"),
    column("diff_tolerance", pa.float64(), "", AGREED,
           "beyond it the point is an error (reference.py)"),
]
TRAINING = [  # task training only (sweep.py): the loss on the point's batch around its steps
    column("loss_start", pa.float64(), "", AGREED, "training: the loss before the point's steps"),
    column("loss_end", pa.float64(), "", AGREED, "training: the loss after them"),
    column("train_steps", pa.int64(), "", AGREED,
           "training: optimiser steps the point took, warm-up included"),
    column("learning_rate", pa.float64(), "", AGREED, "training: the optimiser's"),
]
GENERATION = [  # task generation only (sweep.py, timing.generation_split; docs/method.md)
    column("new_tokens", pa.int64(), "tokens", AGREED,
           "generation: tokens each call generates after the prompt (samples: whole calls)"),
    column("first_token_samples", pa.list_(pa.float64()), "ms", OWN_ROW,
           "generation: every call of one new token"),
    column("first_token_first_call_ms", pa.float64(), "ms", MEDIAN_OF,
           "generation: the untimed first of those calls"),
    column("first_token_ms", pa.float64(), "ms", MEDIAN_OF,
           "generation: time to first token, the median of the one-token calls (the prefill)",
           (INDEX,)),
    column("per_token_ms", pa.float64(), "ms", MEDIAN_OF,
           "generation: time per output token after it, (whole - first) / (new_tokens - 1) "
           "of the medians (the decode)", (INDEX,)),
    column("tokens_per_s", pa.float64(), "tokens/s", MEDIAN_OF,
           "generation: batch x new_tokens per second of the whole call", (INDEX, TABLE)),
    column("tokens_agree", pa.int64(), "tokens", AGREED,
           "generation: leading tokens equal to PyTorch eager's in every row", (INDEX, TABLE)),
    column("token_margin", pa.float64(), "", AGREED,
           "generation: the top-two logit gap where they first differ (reference.py)"),
    column("token_tolerance", pa.float64(), "", AGREED,
           "generation: the gap within which that divergence is rounding (beyond it: error)"),
]
GRAPH = [  # mode compile (adapters/pytorch.py): what torch.compile did during the point
    column("compiles", pa.int64(), "", LARGEST,
           "mode compile: graphs Dynamo compiled (a static graph per point: 1)"),
    column("recompiles", pa.int64(), "", LARGEST,
           "mode compile: of those, compiled after the point's first call (0)"),
    column("graph_breaks", pa.int64(), "", LARGEST, "mode compile: Dynamo's graph breaks"),
]
DEPLOYMENT = [  # deployment modes only (adapters/deployed.py says how each is measured)
    column("artifact_bytes", pa.int64(), "bytes", AGREED,
           "deployment: size on disk of the exported artifact the point ran", (TABLE,)),
    column("export_s", pa.float64(), "s", MEDIAN_OF,
           "deployment: wall time of that artifact's export", (TABLE,)),
    column("artifact_load_ms", pa.float64(), "ms", MEDIAN_OF,
           "deployment: the runtime's load call alone", (TABLE,)),
    column("load_ms", pa.float64(), "ms", MEDIAN_OF,
           "deployment: cold start, C/C++ process start (Python: load) to first output",
           (TABLE,)),
    column("runtime", pa.string(), "", AGREED,
           "deployment: e.g. libtorch, tensorflow-c, torch.jit (Python)"),
    column("runtime_version", pa.string(), "", AGREED, "deployment: the runtime's version"),
]
WORK = [
    column("flops", pa.float64(), "FLOP", AGREED,
           "analytic FLOPs of a call (cell/flops.py; training 3 x forward); empty for a model "
           "type it does not count (planning says so) and for generation"),
    column("achieved_gflops", pa.float64(), "GFLOP/s", DERIVED,
           "flops / the reported time", (SITE, CHART, TABLE)),
]


def _environment(name, kind, meaning, unit="", pool=AGREED, shows=()):
    return column(name, kind, unit, pool, meaning, shows)


ENVIRONMENT = [
    _environment("python", pa.string(), "the cell's Python"),
    _environment("framework_version", pa.string(), "the framework's version", shows=(SITE,)),
    _environment("framework_build", pa.string(),
                 "what the framework was built with, as it reports it (JSON): CPU capability, "
                 "oneDNN/MKL, OpenMP, compiler and flags (cell/builds.py)"),
    _environment("transformers_version", pa.string(), "transformers' version"),
    _environment("numpy_version", pa.string(), "numpy's version"),
    _environment("pyarrow_version", pa.string(), "pyarrow's version"),
    _environment("cuda", pa.string(), "the CUDA the framework was built with"),
    _environment("cudnn", pa.string(), "its cuDNN"),
    _environment("tf32", pa.string(),
                 "TF32 for fp32 matrix products as the framework reports its switches: on, off, "
                 "or n/a (a CPU, or an era without the switch); config key tf32 sets it"),
    _environment("device_name", pa.string(), "the accelerator's name", shows=(SITE,)),
    _environment("gpu_driver", pa.string(), "its driver"),
    _environment("cpu_model", pa.string(), "the CPU's model name", shows=(SITE,)),
    _environment("cpu_flags", pa.string(), "the vector extensions that set the CPU's peak FLOP/s"),
    _environment("cpu_max_mhz", pa.float64(), "the CPU's largest clock", unit="MHz"),
    _environment("logical_cpus", pa.int64(), "the machine's logical CPUs"),
    _environment("threads", pa.int64(), "the framework's threads"),
    _environment("cpu_affinity", pa.string(), "the CPUs the process was bound to (cpuset notation)"),
    _environment("omp_binding", pa.string(), "OpenMP thread placement (conditions.py)"),
    _environment("gc_policy", pa.string(), "what the garbage collector did while duel took samples"),
    _environment("hostname", pa.string(), "the machine's name"),
    _environment("platform", pa.string(), "the operating system and architecture"),
    _environment("runner", pa.string(),
                 "how the cell ran: native, venv, conda, docker or apptainer"),
    _environment("image", pa.string(), "the container image"),
    _environment("image_digest", pa.string(), "its digest"),
    _environment("git_commit", pa.string(), "Duel's commit (+dirty with changes)"),
    _environment("config_sha256", pa.string(), "the settings' hash"),
    _environment("started_at", pa.string(), "the cell's start (UTC)"),
    _environment("seed", pa.int64(), "the seed of the weights and inputs"),
    # Where a SLURM job ran the cell (empty outside SLURM): environment.slurm_columns.
    _environment("slurm_job_id", pa.string(), "SLURM: the job"),
    _environment("slurm_cluster", pa.string(), "SLURM: the cluster"),
    _environment("slurm_partition", pa.string(), "SLURM: the partition"),
    _environment("slurm_node", pa.string(), "SLURM: the node"),
    _environment("slurm_cpus_per_task", pa.int64(), "SLURM: CPUs per task"),
    _environment("slurm_cpus_on_node", pa.int64(), "SLURM: CPUs on the node"),
    _environment("slurm_mem_mb", pa.int64(), "SLURM: the memory asked for", unit="MiB"),
    _environment("slurm_gpus", pa.string(), "SLURM: the GPUs"),
    # The software as installed (environment.lock_columns, cell/locks.py).
    _environment("lock_file", pa.string(), "the lock file the environment was built from"),
    _environment("lock_sha256", pa.string(), "its SHA-256"),
    _environment("installed_sha256", pa.string(),
                 "the SHA-256 of the installed set (normalised name==version lines)"),
    _environment("lock_match", pa.bool_(), "whether the two agree exactly"),
    _environment("lock_drift", pa.string(), "what differs if not"),
    _environment("drift_accepted", pa.bool_(),
                 "whether the run was told to accept a drifted workflow environment "
                 "(config key accept_drift)"),
]

# Each group's heading in results/README.md, in the shard's order.
GROUPS = [
    ("The point", IDENTITY), ("Its outcome", OUTCOME), ("Its process and attempt", ATTEMPT),
    ("Timing", TIMING), ("Memory", MEMORY), ("The output check", CHECK),
    ("Training", TRAINING), ("Generation", GENERATION), ("Compilation", GRAPH),
    ("Deployment", DEPLOYMENT), ("Work", WORK), ("Environment", ENVIRONMENT),
]
DECLARED = [declared for _, group in GROUPS for declared in group]
BY_NAME = dict((declared.name, declared) for declared in DECLARED)
COLUMNS = [(declared.name, declared.type) for declared in DECLARED]
SCHEMA = pa.schema([pa.field(name, kind) for name, kind in COLUMNS])
NAMES = [name for name, _ in COLUMNS]


def pooled_by(pool):
    """The names of the columns a point's processes pool by ``pool``, in the shard's order."""
    return tuple(declared.name for declared in DECLARED if declared.pool == pool)


def shown_in(place):
    """The names of the columns that show in ``place`` (PLACES), in the shard's order."""
    return tuple(declared.name for declared in DECLARED if place in declared.shows)


def doc_rows():
    """A row per column, in the shard's order: (group, name, unit, pooling, shows in, meaning):
    what results/README.md and the spreadsheet's columns sheet say of it."""
    return [(heading, declared.name, declared.unit, POOLS[declared.pool],
             ", ".join(declared.shows), declared.meaning)
            for heading, group in GROUPS for declared in group]


def described(name):
    """A column's meaning and unit in a few words: 'peak host memory of the point (RSS), MiB'."""
    declared = BY_NAME[name]
    return declared.meaning + (", " + declared.unit if declared.unit else "")


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
