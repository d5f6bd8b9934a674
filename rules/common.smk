# Config validation and cell planning: everything here runs before any job is scheduled.
import json
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
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
RUN_CELL = os.path.join(CHECKOUT, "scripts", "run_cell.py")
ERA_ENV = "../envs/current-cpu.yaml"


def cell_python():
    """The interpreter of a cell: the conda env's under --sdm conda, else this one."""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        return "python"
    return sys.executable


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
