"""The workflow's own environment against its lock file (host/plan/drift.py), on package sets
made from the real envs/current-cpu.txt: as pinned, a pin changed or missing, layered and
unknown packages, and the package imported from another checkout."""
import io
import os
import re
import sys

import pytest

from conftest import REPO
from duel.cell import locks
from duel.host.plan import drift
from duel.host.plan.config_keys import PlanError

pytestmark = pytest.mark.unit
PINS = locks.read_pins(os.path.join(REPO, drift.LOCK))


def test_an_environment_as_pinned_passes_and_says_so_in_one_line():
    log = io.StringIO()
    assert drift.check_workflow_env(REPO, False, log=log, packages=dict(PINS)) == []
    assert log.getvalue() == "workflow environment %s: %d of %d pins of %s as pinned\n" % (
        sys.prefix, len(PINS), len(PINS), drift.LOCK)


def test_a_changed_or_missing_pin_stops_planning_naming_each():
    name, other = sorted(PINS)[0], sorted(PINS)[1]
    packages = dict(PINS, **{name: PINS[name] + ".post9"})
    del packages[other]
    with pytest.raises(PlanError) as refused:
        drift.check_workflow_env(REPO, False, log=io.StringIO(), packages=packages)
    said = str(refused.value)
    assert "differs from its lock file %s" % drift.LOCK in said
    assert "  %s: lock %s, installed %s.post9" % (name, PINS[name], PINS[name]) in said
    assert "  %s: lock %s, installed nothing" % (other, PINS[other]) in said
    assert "accept_drift: true" in said


def test_accept_drift_runs_anyway_and_logs_the_differences():
    name = sorted(PINS)[0]
    log = io.StringIO()
    changed = drift.check_workflow_env(REPO, True, log=log,
                                       packages=dict(PINS, **{name: "0.0.1"}))
    assert changed == [(name, PINS[name], "0.0.1")]
    assert "running with a drifted environment" in log.getvalue()
    assert "%s: lock %s, installed 0.0.1" % (name, PINS[name]) in log.getvalue()


def test_layered_and_unknown_packages_are_listed_but_stop_nothing():
    layers = locks.layer_pins(os.path.join(REPO, drift.LOCK))
    layer, pins = sorted(layers.items())[0]
    layered = sorted(set(pins) - set(PINS))[0]
    packages = dict(PINS, **{layered: pins[layered], "not-in-any-lock": "1.0"})
    changed, line = drift.summary_line(REPO, packages)
    assert changed == []
    assert "; also %s (1)" % os.path.relpath(layer, REPO) in line
    assert line.endswith("; in no lock file: not-in-any-lock==1.0")


def test_the_package_of_another_checkout_is_refused_naming_both(tmp_path):
    drift.check_package(REPO)  # this checkout's package, as the tests import it
    said = "imports the duel package from %s: run it with PYTHONPATH=%s" % (
        os.path.join(REPO, "scripts"), os.path.join(str(tmp_path), "scripts"))
    with pytest.raises(PlanError, match=re.escape(said)):
        drift.check_package(str(tmp_path))
