# Config validation and cell planning: everything here runs before any job is scheduled.
import functools
import math
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

CHECKOUT = workflow.basedir

from duel.cell import attempts, contract, models, modes
from duel.cell.adapters import deployed
from duel.host.plan import deployment, drift, planner, references, resources
from duel.host.provenance import runs
from duel.host.render import chart_kinds, outcome
from duel.host.stacks import eras, images
from duel.host.store import archive, ingest
from duel.host.verdicts import settle

USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
USE_APPTAINER = (
    DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
)

# The main invocation plans with probes (interpreters, Docker engine and images); a job's own
# re-parse (on a SLURM node, or a subprocess) trusts it and probes nothing.
MAIN_PROCESS = workflow.is_main_process

try:
    drift.check_package(CHECKOUT)
    planner.prepare_config(config)
except planner.PlanError as error:
    raise WorkflowError(str(error))
validate(config, "../config/schema/config.schema.yaml")
try:
    CELLS = planner.plan_cells(
        config, CHECKOUT, apptainer_enabled=USE_APPTAINER, probe=MAIN_PROCESS
    )
except planner.PlanError as error:
    raise WorkflowError(str(error))
if MAIN_PROCESS:
    for line in planner.lacking(config, CHECKOUT):
        print(line, file=sys.stderr)

# The workflow's own environment against its lock file: checked once, by the main invocation
# (not again by each job's re-parse on a cluster node), before any job starts (host/plan/drift.py).
if workflow.is_main_process:
    try:
        drift.check_workflow_env(CHECKOUT, config.get("accept_drift", False))
    except planner.PlanError as error:
        raise WorkflowError(str(error))


def drift_record(wildcards):
    """--accept-drift for run_cell when config key accept_drift is set: every shard says so."""
    return ["--accept-drift"] if config.get("accept_drift", False) else []


MODELS_DIR = planner.resolve_models_dir(config, CHECKOUT)
ERA_ENVS_DIR = planner.resolve_era_envs_dir(config, CHECKOUT)
METHODS = planner.as_list(config["method"])
# An in-cell command runs under an era's own interpreter, which has the package on its path only
# through PYTHONPATH: the checkout's scripts folder.
CELL_PATH = ["env", "PYTHONPATH={}".format(os.path.join(CHECKOUT, "scripts"))]
RUN_CELL = ["-m", "duel.cell.commands.run_cell"]
MAKE_REFERENCE = ["-m", "duel.cell.commands.make_reference"]
REFERENCE = "results/reference/{era}/{model}/reference.json"
TRAINING_WEIGHTS = "results/reference/{era}/{model}/training.json"
RUNNER = config["runner"]
# The results store every run is added to (duel/host/store/): found as the duel command finds it.
STORE = archive.locate(config.get("store"))


def check_references():
    """The references and kept artifacts on disk against what their jobs recorded
    (duel/host/plan/references.py): refused while planning, since a cell that read a damaged one
    would replace its good shard.
    """
    kinds = {"inference": REFERENCE, "training": TRAINING_WEIGHTS}
    formats = deployment.artifact_formats(config)
    manifests = [
        kinds[task].format(era=era, model=model)
        for era in config["eras"]
        for model in config["models"]
        for task in config["tasks"]
    ] + [
        deployment.artifact_manifest(era, device, artifact_format, model)
        for era in config["eras"]
        for device in config["devices"]
        for artifact_format in formats
        for model in config["models"]
    ]
    for manifest in manifests:
        try:
            references.check(manifest)
        except references.ReferenceMismatch as error:
            raise WorkflowError(str(error))


if MAIN_PROCESS:
    check_references()


EXPORT_ARTIFACTS = ["-m", "duel.cell.commands.export_artifacts"]
BUILD_RUNNER = ["-m", "duel.cell.commands.build_runner"]
CPP_SOURCES = sorted(
    os.path.join(CHECKOUT, "cpp", name)
    for name in os.listdir(os.path.join(CHECKOUT, "cpp"))
)
RUNNERS_DIR = planner.resolve_dir(config, "runners_dir", ".runners", CHECKOUT)


def in_workflow_env(wildcards):
    return eras.in_workflow_env(
        wildcards.era, device_of(wildcards), era_lock(wildcards)
    )


def device_of(wildcards):
    """The cell's device; jobs without one (the shared reference) run on the CPU."""
    return getattr(wildcards, "device", "cpu")


def era_lock(wildcards):
    return eras.lock_file(CHECKOUT, wildcards.era, device_of(wildcards))


def era_env_marker(wildcards):
    """A built era's finished environment (none for the era that runs in the workflow's own
    environment, in images, under conda)."""
    if in_workflow_env(wildcards) or USE_CONDA or RUNNER != "native":
        return []
    settle_era_env(wildcards.era, device_of(wildcards))
    prefix = eras.keyed_prefix(
        ERA_ENVS_DIR, wildcards.era, device_of(wildcards), era_lock(wildcards)
    )
    return os.path.join(prefix, eras.MARKER)


@functools.lru_cache(maxsize=None)
def settle_era_env(era, device):
    """Once per era and device, while jobs are planned: a stale environment loses its marker
    so that build_era_env runs again, but only in the main invocation of a real run; a dry run
    (or --dag, --summary, ...) says what would be rebuilt, a job's re-parse does nothing.
    """
    if not MAIN_PROCESS:
        return
    real_run = workflow.executor_plugin is not None and not workflow.dryrun
    lock = eras.lock_file(CHECKOUT, era, device)
    eras.settle(
        eras.keyed_prefix(ERA_ENVS_DIR, era, device, lock),
        lock,
        discard=real_run and not workflow.touch,
    )


def era_python(wildcards):
    """The interpreter of a cell: its image's or conda env's, its era's venv, or our own."""
    if USE_CONDA or RUNNER != "native":
        return "python"
    if in_workflow_env(wildcards):
        return sys.executable
    prefix = eras.keyed_prefix(
        ERA_ENVS_DIR, wildcards.era, device_of(wildcards), era_lock(wildcards)
    )
    return eras.env_python(prefix)


def era_runner(wildcards):
    if RUNNER != "native":
        return RUNNER
    if USE_CONDA:
        return "conda"
    return "native" if in_workflow_env(wildcards) else "venv"


def era_image(wildcards):
    """The image of a job (runner docker or apptainer): config key images, else the default."""
    return images.image_for(
        config, CHECKOUT, wildcards.era, device_of(wildcards), RUNNER
    )


def era_container(wildcards):
    """The rule's container: image, used by `snakemake --sdm apptainer` (runner apptainer)."""
    return era_image(wildcards) if RUNNER == "apptainer" else None


@functools.lru_cache(maxsize=None)
def sif_digest(path):
    return images.file_digest(path)


def image_record(wildcards):
    """--image/--image-digest for run_cell under apptainer (the docker runner adds its own)."""
    if RUNNER != "apptainer":
        return []
    image = era_image(wildcards)
    if not os.path.isfile(image):  # a URI: Snakemake pulls it after planning
        return ["--image", image]
    return ["--image", image, "--image-digest", sif_digest(image)]


def launcher(record_image):
    """The words before a job's interpreter: the package's path, inside the era's container for
    runner docker (duel/host/stacks/docker_run.py)."""

    def words(wildcards, threads):
        if RUNNER != "docker":
            return CELL_PATH
        words = [sys.executable, "-m", "duel.host.stacks.docker_run"]
        words += ["--image", era_image(wildcards)]
        words += ["--device", device_of(wildcards), "--threads", str(threads)]
        words += ["--checkout", CHECKOUT, "--mount", MODELS_DIR]
        return words + (["--record-image"] if record_image else []) + ["--"] + CELL_PATH

    return words


def era_conda_env(wildcards):
    """The era's conda environment file, for --sdm conda (envs/<era>-<device>.yaml or <era>.yaml)."""
    lock = os.path.relpath(era_lock(wildcards), CHECKOUT)
    return os.path.join("..", os.path.splitext(lock)[0] + ".yaml")


wildcard_constraints:
    era="|".join(config["eras"]),
    device="|".join(config["devices"]),
    framework="|".join(config["frameworks"]),
    mode="[A-Za-z0-9]+",
    precision="|".join(config["precisions"]),
    task="|".join(config["tasks"]),
    model="[A-Za-z0-9][A-Za-z0-9._-]*",
    replicate="[1-9][0-9]*",
    lock_key=eras.LOCK_KEY_PATTERN,
    weights="reference|training",
    artifact="|".join(modes.ARTIFACT_FORMATS),
    runtime="libtorch|tensorflow",


REPLICATES = config["replicates"]
# References (one per model) run before any cell; then round 1 of every cell, round 2, ...
REFERENCE_PRIORITY = REPLICATES + 1


def round_priority(wildcards):
    """Snakemake runs ready jobs of higher priority first (a function of the job's wildcards):
    replicate 1 of every cell before any cell's replicate 2, and so on. Only an order: nothing
    depends on an earlier round's files, so adding a cell never reruns a finished one.
    """
    return REPLICATES - int(wildcards.replicate)


# Settling (duel/host/verdicts/settle.py): after the first REPLICATES rounds, the points whose
# PyTorch/TensorFlow verdict is still open run again in processes up to MAX_REPLICATES.
MAX_REPLICATES = planner.max_replicates(config)
OPEN_POINTS = os.path.join("results", settle.FILE)


def base_shard_paths():
    """The shards of the first rounds: every cell in every process up to REPLICATES."""
    return [planner.shard_path(cell) for cell in CELLS]


def shard_paths():
    """Every shard of the run: the first rounds', and the settling rounds' once their open
    points are known."""
    extra = []
    if MAX_REPLICATES > REPLICATES and os.path.exists(OPEN_POINTS):
        extra = [
            planner.shard_path(cell)
            for cell, _ in settle.extra_cells(settle.read(OPEN_POINTS))
        ]
    return base_shard_paths() + extra


def merged_shards(wildcards):
    """What the merge waits for: with settling, the open points' step first (a checkpoint)."""
    if MAX_REPLICATES > REPLICATES:
        checkpoints.open_points.get()
    return shard_paths()


def settling_input(wildcards):
    """A settling round's cell waits for the open points it measures."""
    return OPEN_POINTS if int(wildcards.replicate) > REPLICATES else []


def settling_points(wildcards):
    """run_cell's --points for a settling round: only its cell's open points."""
    if int(wildcards.replicate) <= REPLICATES:
        return []
    keys = dict(wildcards.items())
    for cell, points in settle.extra_cells(settle.read(OPEN_POINTS)):
        if all(str(getattr(cell, key)) == str(keys[key]) for key in keys):
            return ["--points", ",".join(points)]
    raise WorkflowError("no open points for %s in %s" % (keys, OPEN_POINTS))


def summary_outputs():
    return expand("results/summary.{ext}", ext=["parquet", "csv", "xlsx"])


def model_config(wildcards):
    return planner.model_config_path(MODELS_DIR, wildcards.model)


def cell_mem_mb(wildcards):
    task = getattr(wildcards, "task", "inference")
    batch_sizes, sequence_lengths = planner.task_grid(config, task)
    return planner.estimate_mem_mb(
        models.load_model_spec(model_config(wildcards)),
        max(batch_sizes),
        max(sequence_lengths),
        task == "training",
    )


def reference_arguments(wildcards):
    """What make_reference makes: the inference reference for the grid's lengths, or the
    training weights."""
    if wildcards.weights == "training":
        return ["--training-weights"]
    return ["--sequence-lengths", joined(config["sequence_lengths"])]


def cell_weights(wildcards):
    """What a cell starts from: the inference reference, or the training weights."""
    return TRAINING_WEIGHTS if wildcards.task == "training" else REFERENCE


def cell_artifacts(wildcards):
    """A deployment cell's exported artifacts (rules/deploy.smk), none for other modes."""
    if not deployed.is_deployed(wildcards.mode):
        return []
    return deployment.artifact_folder(
        wildcards.era,
        wildcards.device,
        deployed.artifact_format(wildcards.mode),
        wildcards.model,
    )


def cell_runner(wildcards):
    """A C/C++ deployment cell's runner build record (rules/deploy.smk), none for others."""
    if not deployed.runs_in_cpp(wildcards.mode):
        return []
    return deployment.runner_record(
        RUNNERS_DIR, CHECKOUT, wildcards.era, wildcards.device, wildcards.framework
    )


def deployed_arguments(wildcards):
    """run_cell's --artifact-dir / --runner-build for a deployment cell."""
    words = []
    if deployed.is_deployed(wildcards.mode):
        words += ["--artifact-dir", cell_artifacts(wildcards)]
    if deployed.runs_in_cpp(wildcards.mode):
        words += ["--runner-build", cell_runner(wildcards)]
    return words


def artifact_output():
    """Exported artifacts are removed once their cells ran, unless config keep_artifacts."""
    folder = directory(deployment.ARTIFACT_PATTERN)
    return folder if config.get("keep_artifacts") else temp(folder)


def grid(wildcards):
    """The batch sizes and lengths of the cell's task, as command-line lists."""
    task = getattr(wildcards, "task", "inference")  # an export has no task: inference
    batch_sizes, sequence_lengths = planner.task_grid(config, task)
    return {
        "batch_sizes": joined(batch_sizes),
        "sequence_lengths": joined(sequence_lengths),
    }


def cores_or_none():
    """--cores, or None where none was given: a command that runs no job here (--report,
    --summary) or a run whose jobs go to a cluster executor (SLURM) needs none.
    """
    try:
        return workflow.cores
    except WorkflowError:
        return None


def cores_given():
    """--cores; without it a job's threads are only shown (--report), as 1."""
    return cores_or_none() or 1


def timing_threads(wildcards):
    """Cores a cell or reference takes and times with (duel/host/plan/resources.py).

    Decided per job, once Snakemake knows whether its jobs run here or go to a cluster.
    """
    try:
        return resources.timing_threads(
            config.get("cell_threads"), workflow.non_local_exec, cores_given
        )
    except planner.PlanError as error:
        raise WorkflowError(str(error))


def cell_runtime_min(wildcards, threads):
    """Walltime for a scheduler, from the grid and FLOPs of the cell's own task
    (duel/host/plan/resources.py)."""
    batch_sizes, sequence_lengths = planner.task_grid(config, wildcards.task)
    return resources.cell_runtime_min(
        models.load_model_spec(model_config(wildcards)),
        batch_sizes,
        sequence_lengths,
        METHODS,
        config["duel"],
        config["timeit"],
        threads,
        task=wildcards.task,
        measurements=config["disturbance"]["attempts"]
        * (1 + config["disturbance"]["remeasures"]),
    )


def reference_runtime_min(wildcards, threads):
    return resources.reference_runtime_min(
        models.load_model_spec(model_config(wildcards)),
        config["sequence_lengths"],
        threads,
    )


def check_devices_here():
    """Jobs that run on this machine need their devices here (a cuda cell a GPU). Known only
    once Snakemake knows where jobs run: called before any job starts (onstart, below) and
    while a dry run plans (cell_gpus); jobs sent to a cluster are checked on their node.
    """
    if not workflow.non_local_exec:
        try:
            planner.check_devices(config["devices"])
        except planner.PlanError as error:
            raise WorkflowError(str(error))


def check_disk_here():
    """A real run needs room for what it will write (planner.check_disk), checked before any job."""
    if MAIN_PROCESS:
        try:
            planner.check_disk(config, CHECKOUT, store=STORE)
        except planner.PlanError as error:
            raise WorkflowError(str(error))


def check_cluster_here():
    """A run that sends its jobs to SLURM needs a controller that answers, before any job."""
    if getattr(workflow.executor_plugin, "name", None) == "slurm":
        try:
            planner.check_slurm_controller()
        except planner.PlanError as error:
            raise WorkflowError(str(error))


def cell_gpus(wildcards):
    """A cuda cell asks the scheduler for one GPU (the plugin's `gpu` resource)."""
    if wildcards.device != "cuda":
        return 0
    check_devices_here()
    return 1


onstart:
    check_devices_here()
    check_cluster_here()
    check_disk_here()
    store_runs()
    record_run_start()
    start_fresh_processes()


# The run's budget of fresh processes for disturbed points (duel/cell/attempts.py), shared by
# its jobs on every node through the results folder.
FRESH_PROCESSES = os.path.join("results", "retries")


def start_fresh_processes():
    """Give the run config disturbance's fresh_processes per job it has still to run."""
    if not workflow.is_main_process or workflow.dryrun:
        return
    missing = sum(1 for path in shard_paths() if not os.path.exists(path))
    share = config["disturbance"]["fresh_processes"]
    attempts.write_budget(FRESH_PROCESSES, int(math.ceil(share * missing)))


onsuccess:
    record_run_end("success")
    store_runs()
    say_outcome()


onerror:
    record_run_end("error")
    store_runs()


def store_runs():
    """Add to the results store (duel/host/store/) every shard of results/ not in it yet: at
    the start, what a killed run left or a shard about to be written again; at the end, this
    run. A store that cannot take them costs one line, never the run."""
    if not workflow.is_main_process or workflow.dryrun or not os.path.isdir("results"):
        return
    try:
        added = ingest.add_folder(STORE, "results", create=True)
    except Exception as error:  # any fault of the store: one line, and the run goes on
        print(
            "store: %s: nothing added (%s); the run goes on, its results stay in results/: "
            "`duel store check` names damaged files, `duel store add results` adds them later"
            % (STORE, contract.error_line(error)),
            file=sys.stderr,
        )
        return
    for run_id, count in added:
        print(
            "store: run %s added to %s (%d shards)" % (run_id, STORE, count),
            file=sys.stderr,
        )


# Run manifests (host/provenance/runs.py): written by the main process of a real run only (these
# handlers never run in a dry run; a cluster job re-parsing the workflow is not the main process).
RUN_MANIFEST = []


def record_run_start():
    if not workflow.is_main_process or workflow.dryrun:
        return
    model_files = [
        planner.model_config_path(MODELS_DIR, model) for model in config["models"]
    ]
    RUN_MANIFEST.append(
        runs.start(
            config,
            CHECKOUT,
            ERA_DEVICES,
            ERA_ENVS_DIR,
            workflow.configfiles,
            model_files,
            cores_or_none(),
            sys.argv,
            shard_paths(),
        )
    )


def say_outcome():
    """The run's end-of-run lines (duel/host/render/outcome.py) on the console."""
    if workflow.is_main_process and not workflow.dryrun:
        run_s = runs.wall_seconds(runs.read(RUN_MANIFEST[0])) if RUN_MANIFEST else None
        for line in outcome.lines_of_run(shard_paths(), run_s=run_s):
            print(line, file=sys.stderr)
        refused = outcome.strict_refusal() if config["strict"] else None
        if refused:
            print(refused, file=sys.stderr)
            sys.exit(1)


def record_run_end(status):
    if RUN_MANIFEST:
        runs.finish(
            RUN_MANIFEST[0], status, CHECKOUT, ERA_DEVICES, ERA_ENVS_DIR, shard_paths()
        )


def joined(values):
    return ",".join(str(value) for value in values)


# Report (rules/report.smk): what `rule all` builds besides the summary.
def report_outputs():
    """What `rule all` builds beside the summary so that a default run has its report."""
    return [
        "results/statistics/statistics.html",
        "results/environment.html",
    ] + expand("results/plots/{kind}", kind=chart_kinds.KINDS)


def plot_output(kind):
    """One kind's folder of charts, each PNG in the report with the kind's caption."""
    return report(
        directory("results/plots/%s" % kind),
        patterns=["{figure}.png"],
        caption="../report/plots/%s.rst" % kind,
        category="At a glance" if kind in chart_kinds.AT_A_GLANCE else "Charts",
        subcategory=chart_kinds.SUBCATEGORIES[kind],
        labels={"figure": "{figure}"},
    )


# The environment page lists the lock file of every era and device the run used.
ERA_DEVICES = sorted({(cell.era, cell.device) for cell in CELLS})


def era_lock_files(wildcards):
    return [eras.lock_file(CHECKOUT, era, device) for era, device in ERA_DEVICES]
