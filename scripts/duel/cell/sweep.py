"""One process's sweep: every point (batch size x sequence length x method), smallest first,
for each of its modes in turn.

A process measures one framework's model in one or more modes (modes.process_groups); the model
is built once for the modes that build it alike; each point then gets its input, is timed, and
has its peak host memory measured. A point that fails becomes a row with its status (``oom``, ``error``) and the
error text, and the sweep goes on; a point whose length exceeds the model's maximum is a
``skipped`` row with the reason. Nothing measured is dropped.
"""

import sys
import time
import traceback
from collections import namedtuple

import numpy as np

from . import conditions, contract, flops, models, reference, timing
from .memory import PeakRssProbe

Point = namedtuple("Point", "batch_size seq_len method mode")
Point.__new__.__defaults__ = (None,)

CellSpec = contract.Cell  # the cell's identity (contract.CELL_KEYS)


def plan_points(batch_sizes, sequence_lengths, methods, modes=(None,)):
    """Points in the 2019 order: batch size, then length, both ascending; methods within. With
    several modes, each mode's points one after the other, in the process's order (modes.py
    process_groups: eager before graph modes), never interleaved: a graph mode's traces stay
    resident and would sit under the next mode's peak memory."""
    return [
        Point(batch, length, method, mode)
        for mode in modes
        for batch in sorted(set(batch_sizes))
        for length in sorted(set(sequence_lengths))
        for method in methods
    ]


def token_ids(spec, batch_size, seq_len, seed):
    """One seeded row of random token ids, repeated over the batch (as the 2019 script did)."""
    row = np.random.RandomState(seed).randint(0, models.vocab_size(spec), size=seq_len)
    return np.tile(row.astype(np.int64), (batch_size, 1))


def check_output(adapter, call, method, reference_dir, seq_len):
    """One more call, outside the timing: its final hidden state against the reference."""
    expected = reference.load_reference(reference_dir, seq_len) if reference_dir else None
    if expected is None:
        return {}
    with adapter.inference_context(method):
        hidden = adapter.to_numpy(adapter.last_hidden_state(call()))
    return {
        "max_abs_diff": reference.max_abs_difference(hidden, expected),
        "diff_tolerance": reference.tolerance(expected, adapter.check_precision()),
    }


def measure(adapter, spec, point, settings):
    """Time one point and measure its peak host and device memory; returns those columns and
    the call (inference, generation: the whole generation) or the training columns (training).
    Generation times two calls, each as any call is timed: one generating the first token
    alone (the prefill) and one generating ``new_tokens`` (the point's samples)."""
    if adapter.task == "training" and not adapter.fresh:  # each point starts from the weights
        adapter.build(spec, settings.seed, settings.reference_dir)
    adapter.begin_point()
    adapter.reset_device_peak()
    canary_before_ms = conditions.canary_ms()
    watch = conditions.CpuWatch().start()
    probe = PeakRssProbe().start()
    began = time.perf_counter()
    inputs = adapter.inputs(token_ids(spec, point.batch_size, point.seq_len, settings.seed))
    prepared = time.perf_counter()
    if adapter.task == "training":
        adapter.fresh = False
        loss_start = adapter.evaluation_loss(inputs)
        call = counted(adapter.training_step(inputs, settings.learning_rate))
    elif adapter.task == "generation":
        first_token = adapter.first_token_call(inputs, settings.new_tokens)
        call = adapter.generate_call(inputs, settings.new_tokens)
    else:
        call = adapter.call_for(point.method, inputs)
    setup_s = time.perf_counter() - prepared
    with adapter.inference_context(point.method):
        if point.method == "timeit":
            measurement = timing.time_timeit(call, settings.timeit)
        elif adapter.times_itself:
            measurement = adapter.time_point(inputs, settings.duel)
        else:
            if adapter.task == "generation":
                first = timing.time_duel(first_token, adapter.synchronise, settings.duel,
                                         watch=sample_watch(settings),
                                         overhead_s=settings.overhead_s)
            measurement = timing.time_duel(call, adapter.synchronise, settings.duel,
                                           watch=sample_watch(settings),
                                           overhead_s=settings.overhead_s)
    columns = timing.summarise(measurement)
    if adapter.task == "generation":
        columns.update(timing.generation_columns(first, measurement, point.batch_size,
                                                 settings.new_tokens))
    columns.update(adapter.graph_columns())
    columns["point_wall_s"] = time.perf_counter() - began
    columns.update(watch.stop())
    columns["setup_s"] = setup_s
    columns["canary_before_ms"] = canary_before_ms
    columns["canary_after_ms"] = conditions.canary_ms()
    columns["peak_host_rss_mb"] = probe.peak_mib()
    columns["peak_host_rss_method"] = probe.method
    columns["peak_device_mb"] = adapter.device_peak_mib()
    columns["peak_device_method"] = adapter.device_peak_method
    columns.update(adapter.point_columns(columns))
    if adapter.task == "training":
        columns.update(loss_start=loss_start, loss_end=adapter.evaluation_loss(inputs),
                       train_steps=call.calls, learning_rate=settings.learning_rate)
    return columns, call


def sample_watch(settings):
    """A fresh judge of each duel sample (conditions.SampleWatch), or None without limits."""
    return conditions.SampleWatch(settings.limits) if settings.limits else None


def counted(call):
    """``call`` that counts its calls (in ``.calls``): the optimiser steps a point took."""
    def counting():
        counting.calls += 1
        return call()
    counting.calls = 0
    return counting


def judge_training(columns):
    """A training point whose loss did not fall is an error: the step did not train."""
    if columns["loss_end"] < columns["loss_start"]:
        return {}
    return {"status": "error", "message": (
        "loss did not fall: %.6g before and %.6g after %d steps at learning rate %g"
        % (columns["loss_start"], columns["loss_end"], columns["train_steps"],
           columns["learning_rate"]))}


def judge_tokens(adapter, call, point, settings):
    """The token columns of a generation point: one more whole generation, outside the timing,
    against PyTorch eager's tokens (reference.token_judgement); a divergence beyond its rule,
    or a check that cannot run, makes the point an error while its times stay in the row."""
    try:
        expected = (reference.load_generated(settings.reference_dir, point.seq_len)
                    if settings.reference_dir else None)
        if expected is None:
            return {}
        with adapter.inference_context(point.method):
            generated = adapter.generated_tokens(call(), point.seq_len)
        columns, problem = reference.token_judgement(generated, expected,
                                                     adapter.check_precision())
    except Exception as error:
        return {"status": "error", "message": "token check failed: " + contract.error_line(error)}
    if problem:
        columns.update(status="error", message=problem)
    return columns


def judge_output(adapter, call, point, settings):
    """The output check's columns; a difference beyond tolerance, or a check that cannot run,
    makes the point an error while its times stay in the row."""
    try:
        columns = check_output(adapter, call, point.method, settings.reference_dir, point.seq_len)
    except Exception as error:
        return {"status": "error", "message": "output check failed: " + contract.error_line(error)}
    if columns and columns["max_abs_diff"] > columns["diff_tolerance"]:
        columns["status"] = "error"
        columns["message"] = (
            "output differs from PyTorch eager on the same weights and input: max |difference| "
            "%.3g > tolerance %.3g" % (columns["max_abs_diff"], columns["diff_tolerance"])
        )
    return columns


SweepSettings = namedtuple("SweepSettings", "seed duel timeit reference_dir learning_rate "
                                            "limits overhead_s new_tokens")
# limits (conditions.Limits): each duel sample judged by them; overhead_s: a point's share of
# its process's fixed cost, beyond its own first call and warm-up (run_sweep sets it);
# new_tokens: the tokens each generation call generates after its prompt
SweepSettings.__new__.__defaults__ = (None, 0.0, 32)


def build(adapters, spec, settings, log):
    """Build each adapter's model, one model for the modes that would build alike
    (``build_alike``): {mode: (why its points are skipped, why they fail)}, each None."""
    built, models_built = {}, {}
    for mode, adapter in adapters.items():
        unsupported, failed = adapter.unsupported_reason(spec), None
        alike = adapter.build_alike()
        try:
            if unsupported:
                pass
            elif alike is not None and alike in models_built:
                adapter.adopt(models_built[alike])
            else:
                adapter.build(spec, settings.seed, settings.reference_dir)
                if alike is not None:
                    models_built[alike] = adapter.model
        except Exception as error:  # a mode whose model cannot be built reports every point
            traceback.print_exc(file=log)
            failed = "model build failed: " + contract.error_line(error)
        built[mode] = (unsupported, failed)
    return built


def run_sweep(adapters, spec, cell, points, settings, environment, log=sys.stderr, started=None,
              progress=None, judge=None, journal=None, mode_columns=None):
    """Build each mode's model once, then run every point; returns one contract row per point
    and measurement. ``adapters``: {mode: adapter} (or one adapter, for ``cell.mode``); a point
    whose mode is None is the cell's. ``started``: when the process started (time.time()), for
    each row's ``startup_s``; ``progress``: a stream that gets each point's line too (the run's
    console); ``judge`` (conditions.Judge): marks each row as it is measured, and a disturbed
    point is measured again at once, ``judge.limits.remeasures`` times at most; ``journal``
    (journal.Journal): told of each point as it begins and of each row as it is measured;
    ``mode_columns``: {mode: columns} its rows get beside ``environment``."""
    if not isinstance(adapters, dict):
        adapters = {cell.mode: adapters}
    points = [point if point.mode else point._replace(mode=cell.mode) for point in points]
    built = build(adapters, spec, settings, log)
    startup_s = time.time() - started if started is not None else None
    if judge is not None and any(not (unsupported or error)
                                 for unsupported, error in built.values()):
        judge.calibrate()
    remeasures = judge.limits.remeasures if judge is not None else 0
    # what a process-point costs beyond its own calls: its share of the process's start-up
    settings = settings._replace(
        limits=judge.limits if judge is not None else None,
        overhead_s=(startup_s or 0.0) / max(1, len(points)))
    rows = []
    for point in points:
        for remeasure in range(1 + remeasures):
            if journal is not None:
                journal.begin(point)
            row = point_row(adapters[point.mode], spec, cell, point, settings,
                            dict(environment, **(mode_columns or {}).get(point.mode, {})),
                            log, *built[point.mode])
            row.update(startup_s=startup_s, remeasure=remeasure)
            reason = judge(row) if judge is not None else None
            say(point_line(row), log, progress)
            rows.append(row)
            if journal is not None:
                journal.row(row)
            if not (reason and conditions.slow_process(row, judge.limits)):
                break
    return rows


def point_row(adapter, spec, cell, point, settings, environment, log, unsupported, build_error):
    """One measurement of ``point``: its contract row, whatever happens."""
    row = contract.empty_row()
    row.update(environment)
    row.update(cell._asdict())
    row.update(point._asdict())  # the point's mode, one of the process's
    row["process_modes"] = cell.mode
    row["flops"] = flops.point_flops(spec, cell.task, point.batch_size, point.seq_len)
    limit = spec.max_sequence_length
    longest = point.seq_len + (settings.new_tokens if cell.task == "generation" else 0)
    if unsupported:
        row["status"], row["message"] = "skipped", unsupported
    elif limit is not None and longest > limit:
        row["status"] = "skipped"
        row["message"] = "sequence length %d exceeds the model's maximum of %d" % (
            longest,
            limit,
        )
        if longest > point.seq_len:
            row["message"] += " (a prompt of %d and %d new tokens)" % (point.seq_len,
                                                                     settings.new_tokens)
    elif adapter.point_unsupported(point):
        row["status"], row["message"] = "skipped", adapter.point_unsupported(point)
    elif build_error:
        row["status"], row["message"] = "error", build_error
    else:
        try:
            columns, call = measure(adapter, spec, point, settings)
            row.update(columns)
            row["status"] = "ok"
            reported = row[contract.reported_statistic(point.method)]
            row["achieved_gflops"] = flops.achieved_gflops(row["flops"], reported)
            problem = adapter.graph_problem(columns)
            if problem:
                row["status"], row["message"] = "error", problem
            elif cell.task == "training":
                row.update(judge_training(columns))
            elif cell.task == "generation":
                row.update(judge_tokens(adapter, call, point, settings))
            else:
                row.update(judge_output(adapter, call, point, settings))
        except Exception as error:  # the point fails, the sweep goes on
            traceback.print_exc(file=log)
            row["status"] = "oom" if adapter.is_out_of_memory(error) else "error"
            row["message"] = contract.error_line(error)
        adapter.release_point()
    return row


def point_line(row):
    """One finished point in a line, e.g. 'gpt2 pytorch eager 1x128 duel r2: 157.3 ms (n 14,
    1.8%)': its reported figure, samples and their relative spread, or its status and the
    first line of its message."""
    where = "%s %s %s %dx%d %s r%s" % (row["model"], row["framework"], row["mode"],
                                       row["batch_size"], row["seq_len"], row["method"],
                                       row["replicate"])
    if (row.get("attempt") or 1) > 1:
        where += " attempt %d" % row["attempt"]
    if row.get("remeasure"):
        where += " again %d" % row["remeasure"]
    if row["status"] != "ok":
        return "%s: %s: %s" % (where, row["status"], contract.first_line(row["message"] or ""))
    figure = row[contract.reported_statistic(row["method"])]
    spread = 100.0 * row["std"] / row["mean"] if row["mean"] else 0.0
    line = "%s: %.3f ms (n %d, %.1f%%)" % (where, figure, row["n_samples"], spread)
    if row.get("disturbed"):
        line += ", disturbed: " + row["disturbed"]
    return line


def say(line, *streams):
    """``line`` to each stream that is there, in one write each, so that lines of jobs writing
    to the same console never mix mid-line; a stream that is gone is skipped."""
    for stream in streams:
        if stream is None:
            continue
        try:
            stream.write(line + "\n")
            stream.flush()
        except (IOError, OSError, ValueError):
            pass
