"""What each job of the workflow asks while Snakemake plans it: its interpreter, image, launcher,
inputs, arguments, cores, memory and walltime.

rules/common.smk makes one ``Jobs`` from the run's config and Snakemake's ``workflow``; the rules
name its methods as input, params and resource functions (``JOBS.era_python``). Decided here,
not in the rules, so that it is code the tests import.
"""
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

from duel.cell import models, modes
from duel.cell.adapters import deployed
from duel.host.plan import config_keys, cost, deployment, layout, model_files, planner, probes, \
    resources
from duel.host.stacks import eras, images
from duel.host.verdicts import settle

# An in-cell command runs under an era's own interpreter, which imports the package only through
# PYTHONPATH: the checkout's scripts folder.
CELL_COMMANDS = "duel.cell.commands."
OPEN_POINTS = layout.at(layout.OPEN_POINTS)


def cell_command(name):
    """The words after the interpreter that start in-cell command ``name``."""
    return ["-m", CELL_COMMANDS + name]


def joined(values):
    """[1, 8] -> '1,8': a list as one command-line word."""
    return ",".join(str(value) for value in values)


def device_of(wildcards):
    """The job's device; jobs without one (the shared reference) run on the CPU."""
    return getattr(wildcards, "device", "cpu")


def modes_of(wildcards):
    """The modes a job's process measures; a reference's: its own."""
    return modes.members(getattr(wildcards, "mode", "eager"))


def task_of(wildcards):
    """The job's task; an export or a reference has none: inference."""
    return getattr(wildcards, "task", "inference")


class Jobs:
    """The answers for the jobs of one workflow invocation."""

    def __init__(self, config, checkout, workflow, cells):
        self.config = config
        self.checkout = checkout
        self.workflow = workflow
        self.cells = cells
        methods = workflow.deployment_settings.deployment_method
        self.use_conda = DeploymentMethod.CONDA in methods
        self.use_apptainer = DeploymentMethod.APPTAINER in methods
        self.runner = config["runner"]
        self.models_dir = config_keys.resolve_models_dir(config, checkout)
        self.era_envs_dir = config_keys.resolve_era_envs_dir(config, checkout)
        self.runners_dir = config_keys.resolve_dir(config, "runners_dir", ".runners", checkout)
        self.methods = config_keys.as_list(config["method"])
        self.replicates = config["replicates"]
        self.max_replicates = config_keys.max_replicates(config)
        # References (one per model) run before any cell; then round 1 of every cell, round 2...
        self.reference_priority = self.replicates + 1
        self.cell_path = ["env", "PYTHONPATH=%s" % os.path.join(checkout, "scripts")]
        self.era_devices = sorted({(cell.era, cell.device) for cell in cells})
        self._settled = set()
        self._digests = {}

    # The era's environment: lock, interpreter, image.

    def era_lock(self, wildcards):
        return eras.lock_file(self.checkout, wildcards.era, device_of(wildcards))

    def era_lock_files(self, wildcards):
        """The lock file of every era and device the run uses (the environment page)."""
        return [eras.lock_file(self.checkout, era, device) for era, device in self.era_devices]

    def in_workflow_env(self, wildcards):
        return eras.in_workflow_env(wildcards.era, device_of(wildcards), self.era_lock(wildcards))

    def _era_prefix(self, wildcards):
        return eras.keyed_prefix(self.era_envs_dir, wildcards.era, device_of(wildcards),
                                 self.era_lock(wildcards))

    def era_env_marker(self, wildcards):
        """A built era's finished environment (none for the era that runs in the workflow's own
        environment, in images, under conda)."""
        if self.in_workflow_env(wildcards) or self.use_conda or self.runner != "native":
            return []
        self._settle_era_env(wildcards.era, device_of(wildcards))
        return os.path.join(self._era_prefix(wildcards), eras.MARKER)

    def _settle_era_env(self, era, device):
        """Once per era and device, while jobs are planned: a stale environment loses its marker
        so that build_era_env runs again, but only in the main invocation of a real run; a dry
        run (or --dag, --summary, ...) says what would be rebuilt, a job's re-parse does nothing.
        """
        if (era, device) in self._settled or not self.workflow.is_main_process:
            return
        self._settled.add((era, device))
        workflow = self.workflow
        real_run = workflow.executor_plugin is not None and not workflow.dryrun
        lock = eras.lock_file(self.checkout, era, device)
        eras.settle(eras.keyed_prefix(self.era_envs_dir, era, device, lock), lock,
                    discard=real_run and not workflow.touch)

    def era_python(self, wildcards):
        """The interpreter of a cell: its image's or conda env's, its era's venv, or our own."""
        if self.use_conda or self.runner != "native":
            return "python"
        if self.in_workflow_env(wildcards):
            return sys.executable
        return eras.env_python(self._era_prefix(wildcards))

    def era_runner(self, wildcards):
        if self.runner != "native":
            return self.runner
        if self.use_conda:
            return "conda"
        return "native" if self.in_workflow_env(wildcards) else "venv"

    def era_image(self, wildcards):
        """The image of a job (runner docker or apptainer): config key images, else the default."""
        return images.image_for(self.config, self.checkout, wildcards.era, device_of(wildcards),
                                self.runner)

    def era_container(self, wildcards):
        """The rule's container: image, used by `snakemake --sdm apptainer` (runner apptainer)."""
        return self.era_image(wildcards) if self.runner == "apptainer" else None

    def image_record(self, wildcards):
        """--image/--image-digest for run_cell under apptainer (the docker runner adds its own)."""
        if self.runner != "apptainer":
            return []
        image = self.era_image(wildcards)
        if not os.path.isfile(image):  # a URI: Snakemake pulls it after planning
            return ["--image", image]
        if image not in self._digests:
            self._digests[image] = images.file_digest(image)
        return ["--image", image, "--image-digest", self._digests[image]]

    def era_conda_env(self, wildcards):
        """The era's conda environment file, for --sdm conda (envs/<era>-<device>.yaml), as the
        rules folder sees it."""
        lock = os.path.relpath(self.era_lock(wildcards), self.checkout)
        return os.path.join("..", os.path.splitext(lock)[0] + ".yaml")

    def launcher(self, record_image):
        """The words before a job's interpreter: the package's path, inside the era's container
        for runner docker (``duel image run``: duel/host/stacks/docker_run.py)."""

        def words(wildcards, threads):
            if self.runner != "docker":
                return self.cell_path
            words = [sys.executable, "-m", "duel.host.cli", "image", "run",
                     "--image", self.era_image(wildcards), "--device", device_of(wildcards),
                     "--threads", str(threads), "--checkout", self.checkout,
                     "--mount", self.models_dir]
            return words + (["--record-image"] if record_image else []) + ["--"] + self.cell_path

        return words

    def software_record(self, wildcards):
        """What run_cell records of the software beside what it finds: --accept-drift where
        config key accept_drift is set; --lock-file where the era's lock is not in envs/ (a
        bisection's era), which the cell could not find by the era's name."""
        found = ["--accept-drift"] if self.config.get("accept_drift", False) else []
        lock = self.era_lock(wildcards)
        if os.path.dirname(os.path.abspath(lock)) != os.path.join(
                os.path.abspath(self.checkout), "envs"):
            found += ["--lock-file", os.path.abspath(lock)]
        return found

    # Rounds and settling (duel/host/verdicts/settle.py): after the first rounds, the points
    # whose verdict is still open run again in processes up to max_replicates.

    def round_priority(self, wildcards):
        """Snakemake runs ready jobs of higher priority first: replicate 1 of every cell before
        any cell's replicate 2, and so on. Only an order: nothing depends on an earlier round's
        files, so adding a cell never reruns a finished one."""
        return self.replicates - int(wildcards.replicate)

    def settles(self):
        return self.max_replicates > self.replicates

    def base_shard_paths(self):
        """The shards of the first rounds: every cell in every process up to replicates."""
        return [planner.shard_path(cell) for cell in self.cells]

    def shard_paths(self):
        """Every shard of the run: the first rounds', and the settling rounds' once their open
        points are known."""
        extra = []
        if self.settles() and os.path.exists(OPEN_POINTS):
            extra = [planner.shard_path(cell)
                     for cell, _ in settle.extra_cells(settle.read(OPEN_POINTS))]
        return self.base_shard_paths() + extra

    def settling_input(self, wildcards):
        """A settling round's cell waits for the open points it measures."""
        return OPEN_POINTS if int(wildcards.replicate) > self.replicates else []

    def settling_points(self, wildcards):
        """run_cell's arguments for a settling round: only its cell's open points planned for
        this many processes, and its cell's noise ratio (settle.cell_arguments)."""
        if int(wildcards.replicate) <= self.replicates:
            return []
        keys = dict(wildcards.items())
        record = settle.read(OPEN_POINTS)
        for cell, _ in settle.extra_cells(record):
            if all(str(getattr(cell, key)) == str(keys[key]) for key in keys):
                return settle.cell_arguments(record, cell)
        raise WorkflowError("no open points for %s in %s" % (keys, OPEN_POINTS))

    # A cell's model, grid, inputs and arguments.

    def model_config(self, wildcards):
        return model_files.model_config_path(self.models_dir, wildcards.model)

    def _spec(self, wildcards):
        return models.load_model_spec(self.model_config(wildcards))

    def grid(self, wildcards):
        """The batch sizes and lengths of the job's task, as command-line lists."""
        batch_sizes, sequence_lengths = config_keys.task_grid(self.config, task_of(wildcards))
        return {"batch_sizes": joined(batch_sizes), "sequence_lengths": joined(sequence_lengths)}

    def reference_arguments(self, wildcards):
        """What make_reference makes: the inference reference for the grid's lengths, the
        training weights, or the generation weights and tokens for generation's lengths."""
        if wildcards.weights == "training":
            return ["--training-weights"]
        if wildcards.weights == "generation":
            _, lengths = config_keys.task_grid(self.config, "generation")
            return ["--generation", "--new-tokens", str(self.config["generation"]["new_tokens"]),
                    "--sequence-lengths", joined(lengths)]
        return ["--sequence-lengths", joined(self.config["sequence_lengths"])]

    def cell_weights(self, wildcards):
        """What a cell starts from: its task's reference (layout.WEIGHTS_OF_TASK)."""
        return layout.reference("{era}", "{model}", layout.WEIGHTS_OF_TASK[wildcards.task])

    def cell_artifacts(self, wildcards):
        """A deployment cell's exported artifacts (rules/deploy.smk), none for other modes."""
        if not deployed.is_deployed(wildcards.mode):
            return []
        return deployment.artifact_folder(wildcards.era, wildcards.device,
                                          deployed.artifact_format(wildcards.mode),
                                          wildcards.model)

    def cell_runner(self, wildcards):
        """A C/C++ deployment cell's runner build record (rules/deploy.smk), none for others."""
        if not deployed.runs_in_cpp(wildcards.mode):
            return []
        return deployment.runner_record(self.runners_dir, self.checkout, wildcards.era,
                                        wildcards.device, wildcards.framework)

    def deployed_arguments(self, wildcards):
        """run_cell's --artifact-dir / --runner-build for a deployment cell."""
        words = []
        if deployed.is_deployed(wildcards.mode):
            words += ["--artifact-dir", self.cell_artifacts(wildcards)]
        if deployed.runs_in_cpp(wildcards.mode):
            words += ["--runner-build", self.cell_runner(wildcards)]
        return words

    def references_planned(self):
        """Every reference and kept artifact manifest the run's cells may read."""
        config = self.config
        return [layout.reference(era, model, layout.WEIGHTS_OF_TASK[task])
                for era in config["eras"] for model in config["models"]
                for task in config["tasks"]] + [
            deployment.artifact_manifest(era, device, artifact_format, model)
            for era in config["eras"] for device in config["devices"]
            for artifact_format in deployment.artifact_formats(config)
            for model in config["models"]]

    # Cores, memory, walltime, devices.

    def cores_or_none(self):
        """--cores, or None where none was given: a command that runs no job here (--report,
        --summary) or a run whose jobs go to a cluster executor (SLURM) needs none."""
        try:
            return self.workflow.cores
        except WorkflowError:
            return None

    def timing_threads(self, wildcards):
        """Cores a cell or reference takes and times with (duel/host/plan/resources.py), decided
        per job, once Snakemake knows whether its jobs run here or go to a cluster; without
        --cores a job's threads are only shown (--report), as 1."""
        try:
            return resources.timing_threads(self.config.get("cell_threads"),
                                            self.workflow.non_local_exec,
                                            lambda: self.cores_or_none() or 1)
        except config_keys.PlanError as error:
            raise WorkflowError(str(error))

    def cell_mem_mb(self, wildcards):
        """A cell's memory: its model's for each of its process's modes (at most: modes that
        build alike share one model)."""
        batch_sizes, sequence_lengths = config_keys.task_grid(self.config, task_of(wildcards))
        return cost.estimate_mem_mb(
            self._spec(wildcards), max(batch_sizes), max(sequence_lengths),
            task_of(wildcards) == "training") * len(modes_of(wildcards))

    def reference_mem_mb(self, wildcards):
        """A reference or an export holds both frameworks' copies of the model: twice a cell's."""
        return 2 * self.cell_mem_mb(wildcards)

    def cell_runtime_min(self, wildcards, threads):
        """Walltime for a scheduler, from the grid and FLOPs of the cell's own task."""
        config = self.config
        batch_sizes, sequence_lengths = config_keys.task_grid(config, wildcards.task)
        disturbance = config["disturbance"]
        return resources.cell_runtime_min(
            self._spec(wildcards), batch_sizes, sequence_lengths, self.methods, config["duel"],
            config["timeit"], threads, task=wildcards.task,
            measurements=disturbance["attempts"] * (1 + disturbance["remeasures"])
            * len(modes_of(wildcards)))

    def reference_runtime_min(self, wildcards, threads):
        return resources.reference_runtime_min(self._spec(wildcards),
                                               self.config["sequence_lengths"], threads)

    def check_devices_here(self):
        """Jobs that run on this machine need their devices here (a cuda cell a GPU). Known only
        once Snakemake knows where jobs run: before any job starts and while a dry run plans
        (cell_gpus); jobs sent to a cluster are checked on their node."""
        if not self.workflow.non_local_exec:
            try:
                probes.check_devices(self.config["devices"])
            except config_keys.PlanError as error:
                raise WorkflowError(str(error))

    def cell_gpus(self, wildcards):
        """A cuda cell asks the scheduler for one GPU (the plugin's `gpu` resource)."""
        if wildcards.device != "cuda":
            return 0
        self.check_devices_here()
        return 1

