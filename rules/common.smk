# Config validation and cell planning, before any job is scheduled; what each job asks is
# answered by duel/host/workflow/jobs.py (JOBS), a run's start and end by events.py (EVENTS).
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from duel.cell import modes
from duel.host.plan import config_keys, deployment, drift, layout, planner
from duel.host.render import chart_kinds
from duel.host.stacks import eras
from duel.host.workflow import events, jobs

CHECKOUT = workflow.basedir
SUMMARY = layout.at(layout.SUMMARY)
# The main invocation plans with probes (interpreters, Docker engine and images); a job's own
# re-parse (on a SLURM node, or a subprocess) trusts it and probes nothing.
MAIN_PROCESS = workflow.is_main_process

try:
    drift.check_package(CHECKOUT)
    config_keys.prepare_config(config)
except config_keys.PlanError as error:
    raise WorkflowError(str(error))
validate(config, "../config/schema/config.schema.yaml")
JOBS = jobs.Jobs(config, CHECKOUT, workflow, [])
try:
    CELLS = planner.plan_cells(
        config, CHECKOUT, apptainer_enabled=JOBS.use_apptainer, probe=MAIN_PROCESS
    )
except config_keys.PlanError as error:
    raise WorkflowError(str(error))
JOBS = jobs.Jobs(config, CHECKOUT, workflow, CELLS)
EVENTS = events.Events(JOBS)
if MAIN_PROCESS:
    for line in planner.lacking(config, CHECKOUT):
        print(line, file=sys.stderr)
    # The workflow's own environment against its lock file, once (host/plan/drift.py), and the
    # references and artifacts on disk against what their jobs recorded.
    try:
        drift.check_workflow_env(CHECKOUT, config.get("accept_drift", False))
    except config_keys.PlanError as error:
        raise WorkflowError(str(error))
    EVENTS.check_references()

RUN_CELL = jobs.cell_command("run_cell")
MAKE_REFERENCE = jobs.cell_command("make_reference")
EXPORT_ARTIFACTS = jobs.cell_command("export_artifacts")
BUILD_RUNNER = jobs.cell_command("build_runner")
CPP_SOURCES = sorted(
    os.path.join(CHECKOUT, "cpp", name)
    for name in os.listdir(os.path.join(CHECKOUT, "cpp"))
)


wildcard_constraints:
    era="|".join(config["eras"]),
    device="|".join(config["devices"]),
    framework="|".join(config["frameworks"]),
    # one mode, or the modes that share a process: eager+function
    mode="[A-Za-z0-9]+(?:[+][A-Za-z0-9]+)*",
    precision="|".join(config["precisions"]),
    task="|".join(config["tasks"]),
    model="[A-Za-z0-9][A-Za-z0-9._-]*",
    replicate="[1-9][0-9]*",
    lock_key=eras.LOCK_KEY_PATTERN,
    weights="reference|training|generation",
    artifact="|".join(modes.ARTIFACT_FORMATS),
    runtime="libtorch|tensorflow",


onstart:
    EVENTS.start()


onsuccess:
    EVENTS.success()


onerror:
    EVENTS.error()


def merged_shards(wildcards):
    """What the merge waits for: with settling, the open points' step first (a checkpoint)."""
    if JOBS.settles():
        checkpoints.open_points.get()
    return JOBS.shard_paths()


def summary_outputs():
    return [layout.at(name) for name in layout.SUMMARY_FILES]


def artifact_output():
    """Exported artifacts are removed once their cells ran, unless config keep_artifacts."""
    folder = directory(layout.ARTIFACT_PATTERN)
    return folder if config.get("keep_artifacts") else temp(folder)


def report_outputs():
    """What `rule all` builds beside the summary so that a default run has its report."""
    return [
        layout.at(layout.STATISTICS_PAGE),
        layout.at(layout.ENVIRONMENT),
    ] + expand(layout.at(layout.PLOTS, "{kind}"), kind=chart_kinds.KINDS)


def plot_output(kind):
    """One kind's folder of charts, each PNG in the report with the kind's caption."""
    return report(
        directory(layout.at(layout.PLOTS, kind)),
        patterns=["{figure}.png"],
        caption="../report/plots/%s.rst" % kind,
        category="At a glance" if kind in chart_kinds.AT_A_GLANCE else "Charts",
        subcategory=chart_kinds.SUBCATEGORIES[kind],
        labels={"figure": "{figure}"},
    )
