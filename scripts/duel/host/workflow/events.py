"""A run's start and end, as rules/common.smk's onstart, onsuccess and onerror handlers call them:
the checks before any job, the results store, the run manifest, the fresh-process budget and
the end-of-run lines on the console.

Only the main invocation of a real run acts: a dry run and a job's re-parse on a cluster node do
nothing here.
"""
import math
import os
import sys

from snakemake.exceptions import WorkflowError

from duel.cell import attempts, contract
from duel.host.plan import config_keys, cost, layout, model_files, probes, references
from duel.host.provenance import runs
from duel.host.render import outcome
from duel.host.store import archive, ingest

# The run's budget of fresh processes for disturbed points (duel/cell/attempts.py), shared by
# its jobs on every node through the results folder.
FRESH_PROCESSES = layout.at(layout.RETRIES)


class Events:
    """The handlers of one workflow invocation, over its ``Jobs``."""

    def __init__(self, jobs):
        self.jobs = jobs
        self.config = jobs.config
        self.workflow = jobs.workflow
        # The results store every run is added to: found as the duel command finds it.
        self.store = archive.locate(self.config.get("store"))
        self.manifest = None

    def acts(self):
        return self.workflow.is_main_process and not self.workflow.dryrun

    def check_references(self):
        """The references and kept artifacts on disk against what their jobs recorded
        (duel/host/plan/references.py): refused while planning, since a cell that read a damaged
        one would replace its good shard."""
        for manifest in self.jobs.references_planned():
            try:
                references.check(manifest)
            except references.ReferenceMismatch as error:
                raise WorkflowError(str(error))

    def start(self):
        """Before any job: devices, the cluster and the disk checked, what earlier runs left
        stored, this run's manifest begun and its fresh processes budgeted."""
        self.jobs.check_devices_here()
        self._check_cluster()
        self._check_disk()
        self.store_runs()
        if self.acts():
            self._record_start()
            self._budget_fresh_processes()

    def success(self):
        self._record_end("success")
        self.store_runs()
        self._say_outcome()

    def error(self):
        self._record_end("error")
        self.store_runs()
        if self.acts():
            for line in outcome.unfinished_lines(self.jobs.shard_paths()):
                sys.stderr.write(line + "\n")

    def _check_cluster(self):
        """A run that sends its jobs to SLURM needs a controller that answers."""
        if getattr(self.workflow.executor_plugin, "name", None) == "slurm":
            try:
                probes.check_slurm_controller()
            except config_keys.PlanError as error:
                raise WorkflowError(str(error))

    def _check_disk(self):
        """A real run needs room for what it will write (cost.check_disk)."""
        if self.workflow.is_main_process:
            try:
                cost.check_disk(self.config, self.jobs.checkout, store=self.store)
            except config_keys.PlanError as error:
                raise WorkflowError(str(error))

    def _budget_fresh_processes(self):
        """Config disturbance's fresh_processes per job the run has still to run."""
        missing = sum(1 for path in self.jobs.shard_paths() if not os.path.exists(path))
        share = self.config["disturbance"]["fresh_processes"]
        attempts.write_budget(FRESH_PROCESSES, int(math.ceil(share * missing)))

    def store_runs(self):
        """Add to the results store (duel/host/store/) every shard of results/ not in it yet: at
        the start, what a killed run left or a shard about to be written again; at the end, this
        run. A store that cannot take them costs one line, never the run."""
        if not self.acts() or not os.path.isdir(layout.RESULTS):
            return
        try:
            added = ingest.add_folder(self.store, layout.RESULTS, create=True)
        except Exception as error:  # any fault of the store: one line, and the run goes on
            sys.stderr.write(
                "store: %s: nothing added (%s); the run goes on, its results stay in results/: "
                "`duel store check` names damaged files, `duel store add results` adds them "
                "later\n" % (self.store, contract.error_line(error)))
            return
        for run_id, count in added:
            sys.stderr.write("store: run %s added to %s (%d shards)\n"
                             % (run_id, self.store, count))

    def _record_start(self):
        jobs, config = self.jobs, self.config
        model_paths = [model_files.model_config_path(jobs.models_dir, model)
                       for model in config["models"]]
        self.manifest = runs.start(config, jobs.checkout, jobs.era_devices, jobs.era_envs_dir,
                                   self.workflow.configfiles, model_paths, jobs.cores_or_none(),
                                   sys.argv, jobs.shard_paths())

    def _record_end(self, status):
        if self.manifest:
            jobs = self.jobs
            runs.finish(self.manifest, status, jobs.checkout, jobs.era_devices,
                        jobs.era_envs_dir, jobs.shard_paths())

    def _say_outcome(self):
        """The run's end-of-run lines (duel/host/render/outcome.py); with config strict, exit 1
        where a point was left disturbed or failed."""
        if not self.acts():
            return
        run_s = runs.wall_seconds(runs.read(self.manifest)) if self.manifest else None
        for line in outcome.lines_of_run(self.jobs.shard_paths(), run_s=run_s):
            sys.stderr.write(line + "\n")
        refused = outcome.strict_refusal() if self.config["strict"] else None
        if refused:
            sys.stderr.write(refused + "\n")
            sys.exit(1)
