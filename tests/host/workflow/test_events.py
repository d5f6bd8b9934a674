"""A run's start and end (host/workflow/events.py), through the EVENTS the real Snakefile makes
for a small config: what reaches the results store, and what a run that failed says."""
import os

import pytest

from conftest import planned_workflow
from duel.cell import environment
from duel.host.plan import layout
from duel.host.store import archive
from store_folders import results_folder

pytestmark = pytest.mark.workflow


@pytest.fixture
def planned(tmp_path):
    """EVENTS of a run in ``tmp_path`` (the working folder meanwhile) with its store there."""
    with planned_workflow(tmp_path, models=["gpt2"], batch_sizes=[1], sequence_lengths=[8],
                          store=str(tmp_path / "store")) as workflow:
        os.chdir(str(tmp_path))
        yield workflow.globals["EVENTS"]


def test_the_real_runs_main_invocation_acts_and_its_store_is_the_configs(planned, tmp_path):
    assert planned.acts()  # not a dry run, not a job's re-parse
    assert planned.store == str(tmp_path / "store")


def test_a_runs_results_reach_the_store_once(planned, tmp_path, capfd):
    results_folder(tmp_path, "run-1", "2026-12-01T06:00:00+00:00")
    planned.store_runs()
    assert capfd.readouterr().err == "store: run run-1 added to %s (4 shards)\n" % planned.store
    assert archive.run_ids(planned.store) == ["run-1"]
    planned.store_runs()  # at the run's end again: nothing new
    assert capfd.readouterr().err == "" and archive.run_ids(planned.store) == ["run-1"]


def test_a_store_that_cannot_take_the_results_costs_one_line_not_the_run(planned, tmp_path,
                                                                        capfd):
    results_folder(tmp_path, "run-1", "2026-12-01T06:00:00+00:00")
    (tmp_path / "store").write_text("not a store")
    planned.store_runs()
    said = capfd.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith("store: %s: nothing added (" % planned.store)
    assert "the run goes on, its results stay in results/" in said[0]


def test_a_failed_run_names_each_cell_that_began_and_left_no_shard(planned, capfd):
    shards = planned.jobs.shard_paths()
    began = shards[0]
    log = layout.cell_log(began)
    os.makedirs(os.path.dirname(log))
    with open(log, "w") as handle:
        handle.write(environment.RUNS_ON + "duel2 (10.0.0.2)\nthen the node was lost\n")
    planned.error()
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("Duel:")]
    assert said == ["Duel: cell %s did not finish: it ran on duel2 (10.0.0.2); its log: %s"
                    % (layout.cell_of(began), log)]
