"""Bad input is refused while Snakemake plans, before any job, naming the key and the value.

Every bad case runs through the planning code in this process, as rules/common.smk runs it: the
default config, the command line's overrides parsed and merged as Snakemake does, then
command-line numbers, the schema, the plan and the devices. A few also run end to end through a
real ``snakemake -n`` (a Snakemake start each, seconds), which keeps that wiring proven.
"""
import os

import pytest
from snakemake.exceptions import WorkflowError

from conftest import REPO, plan_as_common_smk, snakemake
from duel.host.plan import config_keys

BAD = [
    (["models=[gpt3]"], ["models", "gpt3"]),
    (["frameworks=[jax]"], ["frameworks", "jax"]),
    (["modes={pytorch: [turbo]}"], ["pytorch", "turbo"]),
    (["modes={tensorflow: [torchscript]}"], ["tensorflow", "torchscript"]),
    (["eras=[hf2020]"], ["eras", "hf2020"]),
    (["devices=[tpu]"], ["devices", "tpu"]),
    (["devices=[cuda]"], ["devices", "cuda", "no NVIDIA GPU"]),
    (["precisions=[fp8]"], ["precisions", "fp8"]),
    (["method=fastest"], ["method", "fastest"]),
    (["batch_sizes=[1,0]"], ["batch_sizes", "0"]),
    (["sequence_lengths=[8,abc]"], ["sequence_lengths", "abc"]),
    (["sequence_lengths=[8.5]"], ["sequence_lengths", "8.5"]),
    (["models=[]"], ["models", "[]"]),
    (["colour=red"], ["colour"]),
    (["models=[gpt2;touch /tmp/pwned]"], ["models", "gpt2;touch /tmp/pwned"]),
    (["models=[../../etc/passwd]"], ["models", "../../etc/passwd"]),
    (["duel={min_samples: 0}"], ["min_samples", "0"]),
    (["duel={warmup_calls: 0}"], ["warmup_calls", "0"]),
    (["cell_threads=0"], ["cell_threads", "0"]),
    (["replicates=0"], ["replicates", "0"]),
    (["replicates=-1"], ["replicates", "-1"]),
    (["replicates=two"], ["replicates", "two"]),
    (["min_effect=-0.1"], ["min_effect", "-0.1"]),
    (["runner=podman"], ["runner", "podman"]),
    (["runner=docker", "images={current-cpu: x;touch /tmp/pwned}"],
     ["images", "x;touch /tmp/pwned"]),
    (["runner=docker", "images={gpu: duel/x:1}"], ["images", "gpu"]),
]


# Each kind of refusal once through a real Snakemake: the planning code's error, the schema's
# (an unknown key; a number the command line gave as text), a name that would be a command, and
# the device check that runs while Snakemake plans.
END_TO_END = ["models=[gpt3]", "colour=red", "replicates=two", "models=[gpt2;touch /tmp/pwned]",
              "devices=[cuda]"]


def case_id(case):
    return " ".join(case[0])


@pytest.mark.unit
@pytest.mark.parametrize("overrides, words", BAD, ids=[case_id(case) for case in BAD])
def test_bad_config_is_refused_by_the_planning_code(overrides, words):
    with pytest.raises((WorkflowError, config_keys.PlanError)) as error:
        plan_as_common_smk(overrides)
    for word in words:
        assert word in str(error.value), str(error.value)


@pytest.mark.unit
def test_the_planning_code_accepts_the_default_and_plans_its_cells():
    cells = plan_as_common_smk([])
    assert cells and {cell.framework for cell in cells} == {"pytorch", "tensorflow"}


@pytest.mark.workflow
@pytest.mark.parametrize("overrides, words",
                         [case for case in BAD if case_id(case) in END_TO_END],
                         ids=[case_id(case) for case in BAD if case_id(case) in END_TO_END])
def test_bad_config_is_refused_before_any_job(tmp_path, overrides, words):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", *overrides, check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    for word in words:
        assert word in output, output[-3000:]
    assert not os.path.exists(str(tmp_path / "results"))
    assert not os.path.exists("/tmp/pwned")


@pytest.mark.unit
def test_end_to_end_cases_are_bad_cases():
    assert set(END_TO_END) <= {case_id(case) for case in BAD}


@pytest.mark.workflow
def test_command_line_numbers_are_numbers(tmp_path):
    result = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--config", "batch_sizes=[1,2]",
                       "sequence_lengths=[8]", "models=[gpt2]", "frameworks=[pytorch]",
                       "duel={min_samples: 5, min_time_s: 0.25}", "replicates=1")
    output = result.stdout + result.stderr
    assert "--batch-sizes 1,2 --sequence-lengths 8" in output.replace("'", "")
    assert "--min-samples 5 --min-time-s 0.25" in output
    assert "run_cell            1" in output or "run_cell 1" in " ".join(output.split())


@pytest.mark.workflow
def test_the_default_and_2019_configs_plan(tmp_path):
    default = snakemake(tmp_path, "-n", "--cores", "2")
    assert "run_cell" in default.stdout
    paper = snakemake(tmp_path, "-n", "--cores", "2", "--configfile",
                      os.path.join(REPO, "config", "paper-2019.yaml"))
    jobs = " ".join(paper.stdout.split())
    # two eras x ten checkpoints x (PyTorch eager + TensorFlow function) x three replicates
    assert "run_cell 120" in jobs
