"""A config as the user wrote it, made ready to plan: old key names and command-line words."""
import pytest

from conftest import plan_as_common_smk


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
