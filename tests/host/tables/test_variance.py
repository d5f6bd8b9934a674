"""Where a run's noise lies (duel/host/tables/variance.py): the variance of a sample and between
processes, recovered from constructed runs whose noise is known, and the samples they size."""
import numpy as np
import pandas as pd
import pytest

from conftest import synthetic_rows
from duel.host.tables import variance

pytestmark = pytest.mark.unit


def frame(**keys):
    rows = pd.DataFrame(synthetic_rows(**keys))
    rows["point_cost_s"] = 2.6
    return rows


def test_the_components_are_the_noise_the_run_was_made_with():
    components = variance.point_components(frame(replicates=40, seed=1, within=0.02,
                                                 between=0.08))
    assert len(components) == 2 * 5 and (components["processes"] == 40).all()  # two cells
    assert np.sqrt(components["sample_var"].median()) == pytest.approx(0.02, rel=0.1)
    assert np.sqrt(components["between_var"].median()) == pytest.approx(0.08, rel=0.25)
    assert variance.noise_ratio(components) == pytest.approx((0.02 / 0.08) ** 2, rel=0.6)


def test_processes_that_differ_more_want_fewer_samples_each_and_a_cheap_sample_more():
    quiet = variance.summary(variance.point_components(
        frame(replicates=30, seed=2, within=0.02, between=0.02)))
    apart = variance.summary(variance.point_components(
        frame(replicates=30, seed=2, within=0.02, between=0.10)))
    assert (apart["samples_sized"] < quiet["samples_sized"]).all()
    assert variance.sized_samples(2.6, 0.005, 0.8) > variance.sized_samples(2.6, 0.25, 0.8)
    assert variance.sized_samples(2.6, 0.25, 0.8) == 3  # the Intel host's run: about 3
    assert np.isnan(variance.sized_samples(2.6, 0.25, np.nan))


def test_one_process_has_no_between_variance_and_the_lines_say_n_a():
    rows = frame(replicates=1, seed=3)
    components = variance.point_components(rows)
    assert components["between_var"].isna().all()
    assert np.isnan(variance.noise_ratio(components))
    text = variance.lines(rows)
    assert text[0].startswith("Noise (logs;")
    assert "between processes n/a, ratio n/a" in text[1]
    assert variance.run_figures(rows)["noise_ratio"] is None


def test_only_counted_ok_duel_rows_count():
    rows = frame(replicates=3, seed=4, status={("pytorch", 1, 8): "oom"})
    components = variance.point_components(rows)
    assert not ((components["framework"] == "pytorch") & (components["batch_size"] == 1)
                & (components["seq_len"] == 8)).any()
    assert variance.point_components(frame(replicates=2, method="timeit")).empty
