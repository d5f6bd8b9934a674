"""Bad input is refused while Snakemake plans, before any job, naming the key and the value.

Every bad case runs through the planning code in this process, as rules/common.smk runs it: the
default config, the command line's overrides parsed and merged as Snakemake does, then
command-line numbers, the schema, the plan and the devices. A few also run end to end through a
real ``snakemake -n`` (a Snakemake start each, seconds), which keeps that wiring proven.
"""
import os

import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from conftest import BROKEN_MODEL_CONFIGS, REPO, snakemake
from duel.host.plan import config_keys, cost, model_files, planner, probes

DEFAULT_CONFIG = os.path.join(REPO, "config", "config.yaml")
SCHEMA = os.path.join(REPO, "config", "schema", "config.schema.yaml")

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


def plan_as_common_smk(overrides, warn=None, config_out=None):
    """The planning of rules/common.smk, in this process, on ``--config`` ``overrides``."""
    with open(DEFAULT_CONFIG) as handle:
        config = yaml.safe_load(handle)
    update_config(config, parse_config(overrides))
    config_keys.prepare_config(config, warn)
    validate(config, SCHEMA)
    cells = planner.plan_cells(config, REPO)
    probes.check_devices(config["devices"], has_gpu=lambda: False)
    if config_out is not None:
        config_out.update(config)
    return cells


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
def test_the_old_name_of_the_timeit_method_still_runs_with_a_deprecation_warning():
    warnings, config = [], {}
    plan_as_common_smk(["method=[duel,hf2019]", "hf2019={repeat: 5}"], warnings.append, config)
    assert config["method"] == ["duel", "timeit"] and "hf2019" not in config
    assert config["timeit"] == {"repeat": 5, "number": 3}  # the schema's default fills number
    assert len(warnings) == 2 and "'timeit'" in warnings[0] and "era" in warnings[0]


@pytest.mark.unit
def test_true_and_false_on_the_command_line_are_booleans():
    config = {}
    plan_as_common_smk(["accept_drift=true", "tf32=false"], config_out=config)
    assert config["accept_drift"] is True and config["tf32"] is False


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


@pytest.mark.unit
def test_cuda_cells_are_planned_per_precision_and_need_a_gpu_to_run_here():
    from duel.host.plan import planner
    config = {"eras": ["current"], "devices": ["cpu", "cuda"], "frameworks": ["pytorch"],
              "modes": {"pytorch": ["eager"]}, "precisions": ["fp32", "bf16"],
              "tasks": ["inference"], "models": ["gpt2"], "batch_sizes": [1],
              "sequence_lengths": [8], "method": "duel", "duel": {"max_samples": 10},
              "replicates": 1}
    probes.check_devices(config["devices"], has_gpu=lambda: True)
    cells = planner.plan_cells(config, REPO)
    assert [(cell.device, cell.precision) for cell in cells] == [
        ("cpu", "fp32"), ("cpu", "bf16"), ("cuda", "fp32"), ("cuda", "bf16")]
    assert planner.shard_path(cells[-1]) == \
        "results/shards/current/cuda/pytorch/eager/bf16/inference/gpt2/r1.parquet"
    with pytest.raises(config_keys.PlanError, match="no NVIDIA GPU"):
        probes.check_devices(config["devices"], has_gpu=lambda: False)


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(BROKEN_MODEL_CONFIGS))
def test_a_broken_model_config_is_refused_in_one_line_naming_the_file(tmp_path, case):
    text, words = BROKEN_MODEL_CONFIGS[case]
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(config_keys.PlanError) as error:
        model_files.check_models(["broken"], str(tmp_path))
    message = str(error.value)
    assert message.startswith(str(tmp_path / "broken.json")) and words in message, message
    assert len(message.splitlines()) == 1


@pytest.mark.unit
def test_a_models_dir_that_does_not_exist_is_refused_in_one_line(tmp_path):
    with pytest.raises(config_keys.PlanError, match="^config key 'models_dir': %s is not a folder$"
                       % (tmp_path / "nowhere")):
        model_files.check_models(["gpt2"], str(tmp_path / "nowhere"))


@pytest.mark.unit
def test_every_shipped_model_config_is_read_by_planning():
    names = sorted(name[:-5] for name in os.listdir(os.path.join(REPO, "config", "models")))
    specs = model_files.check_models(names, os.path.join(REPO, "config", "models"))
    assert sorted(specs) == names and len(names) == 12
    assert all(model_files.parameters(spec) > 1e7 for spec in specs.values())


@pytest.mark.unit
def test_the_plan_is_counted_without_building_it():
    config = {}
    plan_as_common_smk([], config_out=config)
    size = cost.count_plan(dict(config, replicates=10 ** 9))
    # 3 models x 2 processes (PyTorch eager; TensorFlow eager and function side by side)
    assert (size.cells, size.jobs, size.references) == (6, 6 * 10 ** 9 + 3, 3)
    assert size.points == 9 * 10 ** 9 * 2 * 3  # every mode's points
    with pytest.raises(config_keys.PlanError, match="this config makes 6000000003 jobs"):
        cost.check_plan_size(size, 5000)
    # The default grid: 6 cells x at most 6 processes (3, then settling rounds) + 3 references.
    cost.check_plan_size(cost.count_plan(config), 39)
    with pytest.raises(config_keys.PlanError, match="this config makes 39 jobs"):
        cost.check_plan_size(cost.count_plan(config), 38)
    without = dict(config, max_replicates=None)  # no settling: the first rounds alone
    cost.check_plan_size(cost.count_plan(without), 21)
    with pytest.raises(config_keys.PlanError, match="this config makes 21 jobs"):
        cost.check_plan_size(cost.count_plan(without), 20)
