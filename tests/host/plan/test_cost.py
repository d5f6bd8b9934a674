"""A plan is counted before it is built, and a plan too large is refused in one line."""
import pytest

from conftest import plan_as_common_smk
from duel.host.plan import config_keys, cost


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
