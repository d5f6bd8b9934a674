"""What a job asks a cluster for (cores, walltime) and what a cell records of its SLURM job."""
import os
import re

import pytest

from conftest import MODELS, TEST_MODELS, snakemake
from duel.cell import environment, estimate, models
from duel.host.plan import resources
from duel.host.plan.config_keys import PlanError

DUEL = {"warmup_calls": 3, "min_samples": 10, "min_time_s": 1.0, "max_samples": 1000,
        "max_time_s": 60.0}
TIMEIT = {"repeat": 30, "number": 3}


def spec(name, folder=MODELS):
    return models.load_model_spec(os.path.join(folder, name + ".json"))


@pytest.mark.unit
def test_timing_threads_locally_all_cores_on_a_cluster_the_config_or_a_clear_refusal():
    assert resources.timing_threads(None, False, lambda: 8) == 8
    assert resources.timing_threads(4, False, lambda: 8) == 4
    assert resources.timing_threads(16, True, lambda: 1) == 16
    with pytest.raises(PlanError, match="cell_threads"):
        resources.timing_threads(None, True, lambda: 1)


@pytest.mark.unit
def test_runtime_grows_with_the_grid_the_model_and_the_method():
    gpt2, tiny = spec("gpt2"), spec("tiny-bert-16pos", TEST_MODELS)
    one = resources.cell_runtime_min(gpt2, [1], [8], ["duel"], DUEL, TIMEIT, 4)
    assert one >= resources.to_minutes(resources.STARTUP_S)
    grid = resources.cell_runtime_min(gpt2, [1, 8], [8, 1024], ["duel"], DUEL, TIMEIT, 4)
    both = resources.cell_runtime_min(gpt2, [1, 8], [8, 1024], ["duel", "timeit"], DUEL,
                                      TIMEIT, 4)
    assert one < grid < both
    assert resources.cell_runtime_min(tiny, [1, 8], [8, 1024], ["duel"], DUEL, TIMEIT, 4) < grid
    # more cores, shorter calls
    assert resources.cell_runtime_min(gpt2, [8], [1024], ["timeit"], DUEL, TIMEIT, 32) \
        < resources.cell_runtime_min(gpt2, [8], [1024], ["timeit"], DUEL, TIMEIT, 1)


@pytest.mark.unit
def test_points_past_the_maximum_length_cost_no_time():
    bert = spec("bert-base-cased")  # maximum 512
    assert resources.cell_runtime_min(bert, [1], [8, 1024], ["duel"], DUEL, TIMEIT, 1) \
        == resources.cell_runtime_min(bert, [1], [8], ["duel"], DUEL, TIMEIT, 1)


@pytest.mark.unit
def test_a_duel_point_is_bounded_by_max_time_and_a_timeit_point_by_its_calls():
    # 1000 samples of 100 s would be 28 hours: the point stops after max_time_s and one call
    slow = estimate.point_seconds(100.0, "duel", DUEL, TIMEIT)
    assert slow == estimate.POINT_S + (DUEL["warmup_calls"] + 3) * 100.0 + DUEL["max_time_s"]
    assert estimate.point_seconds(1.0, "timeit", DUEL, TIMEIT) \
        == estimate.POINT_S + (2 + 30 * 3) * 1.0


@pytest.mark.unit
def test_slurm_columns_read_the_job_allocation():
    job = {"SLURM_JOB_ID": "4242", "SLURM_CLUSTER_NAME": "big", "SLURM_JOB_PARTITION": "cpu",
           "SLURMD_NODENAME": "n17", "SLURM_CPUS_PER_TASK": "16", "SLURM_CPUS_ON_NODE": "16",
           "SLURM_MEM_PER_NODE": "64000", "SLURM_JOB_GPUS": "0"}
    assert environment.slurm_columns(job) == {
        "slurm_job_id": "4242", "slurm_cluster": "big", "slurm_partition": "cpu",
        "slurm_node": "n17", "slurm_cpus_per_task": 16, "slurm_cpus_on_node": 16,
        "slurm_mem_mb": 64000, "slurm_gpus": "0"}
    per_cpu = dict(job, SLURM_MEM_PER_CPU="2000")
    del per_cpu["SLURM_MEM_PER_NODE"]
    assert environment.slurm_columns(per_cpu)["slurm_mem_mb"] == 32000
    outside = environment.slurm_columns({"PATH": "/usr/bin"})
    assert set(outside) == set(environment.SLURM_COLUMNS) and not any(outside.values())


@pytest.mark.workflow
def test_the_planned_jobs_carry_cores_walltime_and_memory(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "4", "--config", "models=[gpt2]",
                       "frameworks=[pytorch]", "cell_threads=3")
    text = " ".join((result.stdout + result.stderr).split())
    assert "threads: 3" in text
    assert "runtime=" in text and "mem_mb=" in text and "gpu=0" in text


@pytest.mark.unit
def test_a_training_cell_asks_for_more_time_than_inference_on_the_same_grid():
    gpt2 = spec("gpt2")
    grid = ([1, 8], [8, 512], ["duel"], DUEL, TIMEIT, 4)
    inference = resources.cell_runtime_min(gpt2, *grid)
    training = resources.cell_runtime_min(gpt2, *grid, task="training")
    assert training > inference
    # its own grid: a one-point training grid asks for less than the inference grid
    assert resources.cell_runtime_min(gpt2, [1], [8], ["duel"], DUEL, TIMEIT, 4,
                                      task="training") < inference


def planned_resources(output, rule="run_cell"):
    """{task: (runtime, mem_mb)} of the ``rule`` jobs of a dry run's output."""
    found = {}
    for block in output.split("rule %s:" % rule)[1:]:
        task = re.search(r"task=(\w+)", block).group(1)
        runtime = int(re.search(r"runtime=(\d+)", block).group(1))
        found[task] = (runtime, int(re.search(r"mem_mb=(\d+)", block).group(1)))
    return found


@pytest.mark.workflow
def test_the_planned_training_cell_asks_for_more_time_and_memory_than_inference(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "2", "--config", "models=[gpt2]",
                       "frameworks=[pytorch]", "tasks=[inference,training]", "cell_threads=2",
                       "batch_sizes=[1,8]", "sequence_lengths=[8,512]",
                       "training={batch_sizes: [1,8], sequence_lengths: [8,512]}")
    planned = planned_resources(result.stdout + result.stderr)
    assert planned["training"][0] > planned["inference"][0], planned
    assert planned["training"][1] > planned["inference"][1], planned
