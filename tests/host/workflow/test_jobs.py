"""What each job asks while Snakemake plans it (host/workflow/jobs.py), read from the JOBS the
real Snakefile makes for a small config: interpreter, launcher, grid, rounds and settling."""
import os
import sys

import pytest
from snakemake.iocontainers import Wildcards

from conftest import REPO, planned_workflow
from duel.host.workflow import jobs

pytestmark = pytest.mark.workflow
CONFIG = dict(models=["gpt2"], batch_sizes=[1, 2], sequence_lengths=[8], replicates=2,
              max_replicates=3)


def wildcards(**values):
    return Wildcards(fromdict=values)


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("jobs")
    with planned_workflow(workdir, store=str(workdir / "store"), **CONFIG) as workflow:
        yield workflow.globals["JOBS"]


def test_a_job_without_a_device_task_or_mode_is_a_cpu_inference_eager_one():
    bare = wildcards(era="current", model="gpt2")
    assert (jobs.device_of(bare), jobs.task_of(bare), jobs.modes_of(bare)) == (
        "cpu", "inference", ["eager"])
    both = wildcards(device="cuda", task="training", mode="eager+torchscript")
    assert (jobs.device_of(both), jobs.task_of(both)) == ("cuda", "training")
    assert jobs.modes_of(both) == ["eager", "torchscript"]
    assert jobs.joined([1, 8, 64]) == "1,8,64"


def test_a_cell_of_the_current_era_runs_in_the_workflows_own_interpreter(planned):
    cell = wildcards(era="current", device="cpu")
    assert planned.era_python(cell) == sys.executable and planned.era_runner(cell) == "native"
    assert planned.era_lock(cell) == os.path.join(REPO, "envs", "current-cpu.txt")
    # native: the words before the interpreter give it the checkout's package, nothing else
    assert planned.launcher(False)(cell, 2) == ["env", "PYTHONPATH=%s"
                                                % os.path.join(REPO, "scripts")]
    assert planned.software_record(cell) == []  # its lock is in envs/, no drift accepted


def test_the_grid_is_the_configs_as_command_line_lists(planned):
    assert planned.grid(wildcards(task="inference")) == {"batch_sizes": "1,2",
                                                        "sequence_lengths": "8"}


def test_references_run_first_then_each_round_before_the_next(planned):
    priority = [planned.round_priority(wildcards(replicate=str(r))) for r in (1, 2, 3)]
    assert planned.reference_priority > priority[0] > priority[1] > priority[2]


def test_only_a_settling_round_waits_for_the_open_points(planned):
    assert planned.settles()  # max_replicates 3 over replicates 2
    assert planned.settling_input(wildcards(replicate="2")) == []
    assert planned.settling_input(wildcards(replicate="3")) == jobs.OPEN_POINTS
    assert planned.settling_points(wildcards(replicate="1")) == []
    # the first rounds' shards: one per cell and process, none of the settling round yet
    assert len(planned.shard_paths()) == len(planned.cells) == 2 * 2  # frameworks x replicates
    assert not any("/r3." in path for path in planned.shard_paths())
