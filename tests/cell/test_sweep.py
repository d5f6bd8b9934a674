"""The sweep of one cell (duel.cell.sweep.run_sweep) with a fake adapter: no framework imported.

The adapter follows adapters/base.py's interface with numpy "models": its calls return a hidden
state computed from the input, and each test makes one thing go wrong (a point that raises, a
point past the maximum length, a build that fails, an output beyond tolerance, a loss that does
not fall). Each must give its own row and status, the others' rows unaffected. The real
frameworks run the same sweep in tests/cell/test_reference.py, tests/features/test_training.py
and tests/features/test_workflow.py.
"""
import functools
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest


from duel.cell import conditions, contract, models, reference, sweep, timing
from duel.cell.adapters.base import Adapter

pytestmark = pytest.mark.unit

HIDDEN = 4  # the fake model's hidden size
SPEC = models.ModelSpec(
    name="fake-bert", family="bert", max_sequence_length=16,
    architecture={"vocab_size": 50, "hidden_size": HIDDEN, "num_hidden_layers": 1,
                  "num_attention_heads": 1, "intermediate_size": 8,
                  "max_position_embeddings": 16})
QUICK = timing.DuelSettings(warmup_calls=1, min_samples=3, min_time_s=0.0, max_samples=3,
                            max_time_s=1.0)
TIMEIT = timing.TimeitSettings(repeat=3, number=1)
ENVIRONMENT = {"framework_version": "0.fake", "threads": 1}


@pytest.fixture(autouse=True)
def small_canary(monkeypatch):
    """The canary (conditions.canary_ms, two per point) on a tiny matrix: its product of
    192 x 192 takes a tenth of a second on a loaded 2-core machine, and the sweep's logic is
    under test here, not the machine's speed."""
    monkeypatch.setattr(conditions, "canary_ms",
                        functools.partial(conditions.canary_ms, size=8, runs=1))


def hidden_state(ids):
    """The fake model's output: a deterministic function of the token ids, (batch, length, H)."""
    ids = np.asarray(ids, dtype=np.float64)
    return np.stack([0.4 * np.sin(ids * (k + 1)) for k in range(HIDDEN)], axis=-1)


class FakeAdapter(Adapter):
    """A framework that is numpy: ``fail`` names what goes wrong, at which sequence length."""

    framework = "fake"
    modes = ("eager",)

    def __init__(self, task="inference", fail=None, fail_length=None, error=None):
        Adapter.__init__(self, "eager", "cpu", "fp32", 1, task)
        self.fail = fail
        self.fail_length = fail_length
        self.error = error or ValueError("the fake kernel broke\nsecond line")
        self.builds = 0
        self.released = 0
        self.loss = None

    def model_unsupported(self, spec):
        return None  # numpy builds any model type, and transformers stays unimported

    def build(self, spec, seed, weights_dir=None):
        self.builds += 1
        if self.fail == "build":
            raise RuntimeError("hidden size not divisible by heads")
        self.model = spec
        self.fresh = True
        self.loss = 10.0

    def inputs(self, token_ids):
        return np.array(token_ids)

    def failing(self, inputs):
        return self.fail_length is None or inputs.shape[1] == self.fail_length

    def call_for(self, method, inputs):
        def call():
            if self.fail == "call" and self.failing(inputs):
                raise self.error
            return (hidden_state(inputs),)  # a tuple, as transformers 2.1.1 returns
        return call

    def to_numpy(self, tensor):
        return np.asarray(tensor)

    def training_step(self, inputs, learning_rate):
        def step():
            if not (self.fail == "loss" and self.failing(inputs)):
                self.loss *= 0.9
            return self.loss
        return step

    def evaluation_loss(self, inputs):
        return self.loss

    def release_point(self):
        self.released += 1


def cell(task="inference"):
    return contract.Cell("current", "cpu", "fake", "eager", "fp32", task, SPEC.name, 1)


def settings(reference_dir=None):
    return sweep.SweepSettings(seed=0, duel=QUICK, timeit=TIMEIT, reference_dir=reference_dir,
                               learning_rate=1e-3)


def sweep_rows(adapter, lengths=(8, 12), methods=("duel",), reference_dir=None, task="inference"):
    log = io.StringIO()
    points = sweep.plan_points([1, 2], list(lengths), list(methods))
    rows = sweep.run_sweep(adapter, SPEC, cell(task), points, settings(reference_dir),
                           ENVIRONMENT, log=log)
    return {(row["batch_size"], row["seq_len"], row["method"]): row for row in rows}, \
        log.getvalue()


def point_lines(log):
    """The sweep's line per point in its log (tracebacks of failures come between them)."""
    return [line for line in log.splitlines() if line.startswith(SPEC.name + " fake ")]


def assert_ok(row):
    assert row["status"] == "ok" and row["message"] is None, row["message"]
    assert row["n_samples"] == 3 and len(row["samples"]) == 3
    assert row["median"] > 0 and row["achieved_gflops"] > 0
    assert row["peak_host_rss_mb"] > 0 and row["canary_before_ms"] > 0


def write_reference(folder, lengths, spoil=None):
    """The reference folder the sweep reads (reference.py): the fake model's output per length,
    one of them (``spoil``) off by 0.5."""
    os.makedirs(folder)
    for length in lengths:
        expected = hidden_state(sweep.token_ids(SPEC, 1, length, 0))[0]
        if length == spoil:
            expected = expected + 0.5
        np.save(reference.reference_path(folder, length), expected)
    return folder


def test_every_point_is_a_row_with_the_cell_point_and_environment():
    adapter = FakeAdapter()
    rows, log = sweep_rows(adapter, methods=("duel", "timeit"))
    assert list(rows) == [(1, 8, "duel"), (1, 8, "timeit"), (1, 12, "duel"), (1, 12, "timeit"),
                          (2, 8, "duel"), (2, 8, "timeit"), (2, 12, "duel"), (2, 12, "timeit")]
    for (batch, length, method), row in rows.items():
        assert_ok(row)
        assert set(row) == set(contract.NAMES)
        assert (row["framework"], row["model"], row["replicate"]) == ("fake", SPEC.name, 1)
        assert row["framework_version"] == "0.fake" and row["threads"] == 1
        assert row["max_abs_diff"] is None  # no reference: no output check
    assert rows[(1, 8, "timeit")]["repeat"] == 3 and rows[(1, 8, "duel")]["repeat"] is None
    assert adapter.builds == 1 and adapter.released == 8  # built once, every point released
    assert log.splitlines() == point_lines(log) and len(point_lines(log)) == 8
    assert re.match(r"fake-bert fake eager 2x12 timeit r1: [0-9.]+ ms \(n 3, [0-9.]+%\)$",
                    point_lines(log)[-1])


def test_each_point_line_reaches_the_progress_stream_whole_and_a_failure_says_why():
    progress = io.StringIO()
    adapter = FakeAdapter(fail="call", fail_length=12, error=ValueError("broke\nthere"))
    sweep.run_sweep(adapter, SPEC, cell(), sweep.plan_points([1], [8, 12], ["duel"]), settings(),
                    ENVIRONMENT, log=io.StringIO(), progress=progress)
    lines = progress.getvalue().splitlines()
    assert lines[0].startswith("fake-bert fake eager 1x8 duel r1: ")
    assert lines[1] == "fake-bert fake eager 1x12 duel r1: error: ValueError: broke"


@pytest.mark.parametrize("error, status", [
    (ValueError("the fake kernel broke\nsecond line"), "error"),
    (RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"), "oom"),
    (MemoryError(), "oom"),
])
def test_a_point_that_raises_is_its_own_row_and_the_sweep_goes_on(error, status):
    adapter = FakeAdapter(fail="call", fail_length=12, error=error)
    rows, log = sweep_rows(adapter)
    for batch in (1, 2):
        failed = rows[(batch, 12, "duel")]
        assert failed["status"] == status
        assert failed["message"] == contract.error_line(error)  # type and first line only
        assert failed["samples"] is None and failed["median"] is None
        assert failed["flops"] > 0  # what the point would have done is still known
        assert_ok(rows[(batch, 8, "duel")])
    assert adapter.released == 4
    assert "Traceback" in log and len(point_lines(log)) == 4


def test_a_failed_points_message_is_the_errors_type_and_first_line():
    assert contract.error_line(ValueError("\nthe kernel broke\nsecond line")) == (
        "ValueError: the kernel broke")
    assert contract.error_line(MemoryError()) == "MemoryError: "


def test_a_point_beyond_the_maximum_length_is_skipped_without_a_call():
    adapter = FakeAdapter(fail="call", fail_length=32)  # a call at 32 would raise
    rows, log = sweep_rows(adapter, lengths=(8, 16, 32))
    for batch in (1, 2):
        skipped = rows[(batch, 32, "duel")]
        assert skipped["status"] == "skipped"
        assert skipped["message"] == "sequence length 32 exceeds the model's maximum of 16"
        assert skipped["samples"] is None and skipped["peak_host_rss_mb"] is None
        assert_ok(rows[(batch, 16, "duel")])  # the maximum itself runs
        assert_ok(rows[(batch, 8, "duel")])
    assert adapter.released == 4  # skipped points never ran
    assert "Traceback" not in log


def test_a_build_failure_makes_every_point_an_error_that_says_so():
    adapter = FakeAdapter(fail="build")
    rows, log = sweep_rows(adapter, lengths=(8, 32))
    for batch in (1, 2):
        failed = rows[(batch, 8, "duel")]
        assert failed["status"] == "error"
        assert failed["message"] == "model build failed: RuntimeError: hidden size not divisible " \
                                    "by heads"
        assert failed["samples"] is None
        assert rows[(batch, 32, "duel")]["status"] == "skipped"  # still the length's reason
    assert "Traceback" in log and "hidden size not divisible" in log


def test_an_unsupported_cell_is_skipped_and_never_built():
    class Unsupported(FakeAdapter):
        def mode_unsupported(self, spec):
            return "the fake era cannot trace this model"

    adapter = Unsupported()
    rows, _ = sweep_rows(adapter)
    assert {row["status"] for row in rows.values()} == {"skipped"}
    assert {row["message"] for row in rows.values()} == {"the fake era cannot trace this model"}
    assert adapter.builds == 0


def test_an_output_beyond_tolerance_is_an_error_that_keeps_its_times(tmp_path):
    folder = write_reference(str(tmp_path / "reference"), (8, 12), spoil=12)
    rows, _ = sweep_rows(FakeAdapter(), reference_dir=folder)
    for batch in (1, 2):
        good = rows[(batch, 8, "duel")]
        assert_ok(good)
        assert good["max_abs_diff"] == 0.0 and good["diff_tolerance"] == pytest.approx(1e-3)
        bad = rows[(batch, 12, "duel")]
        assert bad["status"] == "error"
        assert bad["max_abs_diff"] == pytest.approx(0.5) and bad["diff_tolerance"] == \
            pytest.approx(1e-3)
        assert bad["message"] == ("output differs from PyTorch eager on the same weights and "
                                  "input: max |difference| 0.5 > tolerance 0.001")
        assert bad["n_samples"] == 3 and bad["median"] > 0  # the times stay in the row


def test_an_output_check_that_cannot_run_is_an_error(tmp_path):
    folder = str(tmp_path / "reference")
    os.makedirs(folder)
    np.save(reference.reference_path(folder, 8), np.zeros((3, HIDDEN)))  # the wrong length
    rows, _ = sweep_rows(FakeAdapter(), lengths=(8,), reference_dir=folder)
    row = rows[(1, 8, "duel")]
    assert row["status"] == "error" and row["message"].startswith("output check failed: ")
    assert row["n_samples"] == 3


def test_a_training_loss_that_does_not_fall_is_an_error():
    adapter = FakeAdapter(task="training", fail="loss", fail_length=12)
    rows, _ = sweep_rows(adapter, task="training")
    for batch in (1, 2):
        trained = rows[(batch, 8, "duel")]
        assert_ok(trained)
        assert trained["loss_end"] < trained["loss_start"] == 10.0
        assert trained["train_steps"] == 1 + 3  # the warm-up call and the samples
        assert trained["learning_rate"] == 1e-3
        stuck = rows[(batch, 12, "duel")]
        assert stuck["status"] == "error"
        assert stuck["message"] == ("loss did not fall: 10 before and 10 after 4 steps at "
                                    "learning rate 0.001")
        assert stuck["n_samples"] == 3 and stuck["loss_end"] == stuck["loss_start"]
    assert adapter.builds == 4  # each training point starts from the weights (build: 1 + 3)


def test_the_sweep_and_the_adapter_interface_import_no_framework():
    code = ("import sys; from duel.cell import sweep; "
            "from duel.cell.adapters import base; "
            "print(sorted({'torch', 'tensorflow', 'transformers'} & set(sys.modules)))")
    output = subprocess.check_output([sys.executable, "-c", code], text=True)
    assert output.strip() == "[]"
