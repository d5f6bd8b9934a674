# Config validation and cell planning: everything here runs before any job is scheduled.
import json
import os
import subprocess
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

CHECKOUT = workflow.basedir
sys.path.insert(0, os.path.join(CHECKOUT, "scripts"))

from duel.host import plan

plan.coerce_integer_lists(config)
validate(config, "../config/schema/config.schema.yaml")
try:
    CELLS = plan.plan_cells(config, CHECKOUT)
except plan.PlanError as error:
    raise WorkflowError(str(error))

MODELS_DIR = plan.resolve_models_dir(config, CHECKOUT)
METHODS = plan.as_list(config["method"])
CELL_PYTHON = sys.executable
RUN_CELL = os.path.join(CHECKOUT, "scripts", "run_cell.py")


def git_commit():
    """The checkout's commit (with '+dirty' for uncommitted changes), recorded in every shard."""
    try:
        run = lambda *args: subprocess.run(
            ["git", "-C", CHECKOUT, *args], capture_output=True, text=True, check=True
        ).stdout.strip()
        return run("rev-parse", "HEAD") + ("+dirty" if run("status", "--porcelain") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# Cells read it from the environment, so a new commit alone does not re-run finished cells.
os.environ["DUEL_GIT_COMMIT"] = git_commit()


wildcard_constraints:
    era="|".join(config["eras"]),
    device="|".join(config["devices"]),
    framework="|".join(config["frameworks"]),
    mode="[A-Za-z0-9]+",
    task="|".join(config["tasks"]),
    model="[A-Za-z0-9][A-Za-z0-9._-]*",


def shard_paths():
    return [plan.shard_path(cell) for cell in CELLS]


def summary_outputs():
    return expand("results/summary.{ext}", ext=["parquet", "csv", "xlsx"])


def model_config(wildcards):
    return plan.model_config_path(MODELS_DIR, wildcards.model)


def cell_mem_mb(wildcards):
    with open(model_config(wildcards)) as handle:
        architecture = json.load(handle)["architecture"]
    return plan.estimate_mem_mb(
        architecture, max(config["batch_sizes"]), max(config["sequence_lengths"])
    )


def joined(values):
    return ",".join(str(value) for value in values)
