"""Compare two finished runs: what got faster or slower, how sure, and what changed in between.

The first run is the baseline, the second the new run. Both are read as merged tables
(``results/summary.parquet``), migrated like old shards (summary.migrated: a summary from
before the replicate dimension is one process per cell), and reduced to one row per point
by replicates.point_table, so each side's figure is the one its own reports show (duel: the
median of the replicate medians; timeit: the mean of every sample).

Points are matched on the cell's identity and the point (contract.CELL_KEYS without the
replicate, plus contract.POINT_KEYS); ``ignore`` drops keys from the match (e.g. ``era``: a
2019-stack baseline against today's stack), as long as each side then has one point per match.
Each matched point gets the ratio new / base of the method's figure, its interval made as the
run's own PyTorch / TensorFlow intervals are (statistics.judge: Welch's t over the processes
where both sides have several replicates, else a bootstrap within one), and a verdict (VERDICTS):
slower or faster where the judge decides so; else *equivalent* where the whole interval lies
inside the band (within the minimum effect, and the machine's own change below), *undecided*
where it reaches across an edge of the band (statistics.decided). A point is *clearly slower
beyond the threshold* (what fails a CI job) when its interval (and so its ratio) lies above
1 + threshold: statistics.is_clear with the threshold as the effect.

The machine's own change counts too (``machine_band``, on by default): every point records a
canary (a fixed numpy product on the cell's cores, timed just before and after it). Where the
two runs' canaries differ by more than the minimum effect, over the whole run (machine_shift:
0.91x and 1.30x between A/A runs here; the first line says so) or around one point (its
replicates' canaries: point_canary; a machine slowed for minutes slows the points timed in
them more than the run's median shows), a change must also lie beyond that shift: the band
spans both (statistics.equivalence_band). A canary timed with another numpy (another era)
measures the software too, so the band is used only where both sides had the same numpy.

What changed between the runs is every environment column (contract.ENVIRONMENT, plus any
column of either summary the contract does not know and that is constant within each process,
such as hash columns added later) whose value differs between the two sides of a matched cell;
values that identify a run rather than describe it (PER_RUN) are left out.

Task generation's verdicts (verdicts/generation.py: per pair of modes, PyTorch / TensorFlow time
to first token and per output token, tokens per second, tokens agreed) are set side by side per
scope and pair of modes (generation_changes), and a decision or a count of differing tokens that
changed between the runs is named, as a point's changed verdict is.
"""
import os
from collections import namedtuple

import numpy as np
import pandas as pd

from duel.cell import conditions, contract

from duel.host.plan import layout
from duel.host.tables import replicates, scopes, summary
from duel.host.verdicts import generation, pairs, statistics

CELL = [name for name in contract.CELL_KEYS if name != "replicate"]
POINT = list(contract.POINT_KEYS)
MATCH = CELL + POINT
IGNORABLE = ("era", "device", "precision", "method")
PER_RUN = ("started_at", "slurm_job_id")  # differ between any two runs: not a change
NOT_RECORDED = "(not recorded)"
SLOWER, FASTER = "slower", "faster"
EQUIVALENT, UNDECIDED = statistics.EQUIVALENT, statistics.UNDECIDED
NEWLY_FAILING, NEWLY_OK, NOT_COMPARED = "newly failing", "newly ok", "not ok in either"
ONLY_BASE, ONLY_NEW = "only in base", "only in new"
VERDICTS = (SLOWER, FASTER, EQUIVALENT, UNDECIDED, NEWLY_FAILING, NEWLY_OK, NOT_COMPARED,
            ONLY_BASE, ONLY_NEW)
SIDE_COLUMNS = ["status", "message", "reported_ms", "replicates", "replicate_samples",
                "n_samples", "canary_ms", "canary_numpy"]
POINT_COLUMNS = [
    "cell", "point", "statistic", "base_ms", "new_ms", "ratio", "ci_low", "ci_high",
    "interval", "replicates_base", "replicates_new", "n_base", "n_new", "min_effect",
    "canary_ratio", "verdict", "note", "beyond_threshold", "status_base", "status_new"]
ENVIRONMENT_COLUMNS = ["column", "base", "new", "cells", "which"]

Run = namedtuple("Run", "label path frame points")
Comparison = namedtuple(
    "Comparison", "base new ignore keys min_effect threshold confidence points environment "
                  "warnings machine_shift exit_status generation")
# Of each run's generation verdict, what generation_changes sets side by side.
GENERATION_SIDES = ["points"] + [
    name + part for name, _ in generation.FIGURES
    for part in ("_ratio", "_low", "_high", "_decision")] + [
    "tokens_per_s_pt", "tokens_per_s_tf", "tokens_differ"]


class CompareError(Exception):
    """Bad input: the message is the one line the user sees."""


def resolve_summary(path):
    """The summary file of ``path``: a run directory (its results/summary.parquet, or a results
    directory's summary.parquet) or the file itself."""
    if not os.path.exists(path):
        raise CompareError("%s: no such file or directory" % path)
    found = layout.summary_file(path)
    if found is None:
        raise CompareError("%s is not a run: it has no %s"
                           % (path, layout.at(layout.SUMMARY)))
    return found


def read_run(path):
    """A run: its summary (migrated) and its point table with each point's reported figure."""
    file = resolve_summary(path)
    try:
        frame = pd.read_parquet(file)
    except Exception as error:  # any failure to read is bad input, named in one line
        raise CompareError("%s: not a readable Parquet summary (%s)" % (file, contract.error_line(error)))
    return read_run_frame(frame, path, file)


def read_run_frame(frame, label="run", file="run"):
    """A run from its summary frame (read_run reads the file)."""
    missing = [name for name in MATCH + ["status", "samples"]
               if name not in frame.columns and name not in summary.MIGRATED_DEFAULTS]
    if missing:
        raise CompareError("%s is not a Duel summary: it has no column %s"
                           % (file, ", ".join(missing)))
    if frame.empty:
        raise CompareError("%s has no points" % file)
    frame = summary.migrated(frame)
    try:
        points = replicates.point_table(frame)
    except Exception as error:
        raise CompareError("%s: its points cannot be read (%s)" % (file, contract.error_line(error)))
    points = points.reset_index(drop=True)
    points["reported_ms"] = [summary.reported_ms(row) for _, row in points.iterrows()]
    points = points.merge(point_canary(frame), on=MATCH, how="left")
    return Run(label, file, frame, points)


def _canary(frame):
    """Every canary timing of a run's counted ok points (``canary_ms``: the one before and the one
    after each point, two rows per point and replicate), with the point's keys and numpy version."""
    ok = replicates.counted(frame)
    ok = ok[ok["status"] == "ok"]
    # what timed them: the numpy, and the canary of the rule that judged them (conditions.RULE)
    who = [_text(numpy) if rule == conditions.RULE
           else "%s (the 192x192 canary)" % (_text(numpy) or "unknown")
           for numpy, rule in zip(ok["numpy_version"], ok["disturbance_rule"])]
    timings = [ok[MATCH].assign(numpy_version=who,
                                canary_ms=pd.to_numeric(ok[name], errors="coerce"))
               for name in ("canary_before_ms", "canary_after_ms")]
    return pd.concat(timings, ignore_index=True)


def point_canary(frame):
    """Per point (MATCH): the machine's speed around it, the median of every canary timed
    before and after it in any replicate (``canary_ms``; absent in runs without a canary), and
    the numpy that timed it (``canary_numpy``)."""
    canary = _canary(frame).dropna(subset=["canary_ms"])
    canary = canary.assign(canary_numpy=canary["numpy_version"])
    return canary.groupby(MATCH, dropna=False).agg(
        canary_ms=("canary_ms", "median"),
        canary_numpy=("canary_numpy", lambda values: "; ".join(_distinct(values)))).reset_index()


def canary_numpy(run):
    """The numpy versions that timed a run's canaries, as one text ('' where none)."""
    return "; ".join(_distinct(_canary(run.frame).dropna(subset=["canary_ms"])["numpy_version"]))


def baseline_summary(path, own):
    """The workflow's baseline (config key baseline): its summary's absolute path, read once so
    that a bad one stops the run before any job; None when unset. ``own``: this run's summary."""
    if not path:
        return None
    summary_path = os.path.abspath(read_run(path).path)
    if summary_path == os.path.abspath(own):
        raise CompareError("%s is this run's own summary" % path)
    return summary_path


def match_keys(ignore):
    unknown = [name for name in ignore if name not in IGNORABLE]
    if unknown:
        raise CompareError("cannot ignore %s: only %s" % (", ".join(unknown), ", ".join(IGNORABLE)))
    return [name for name in MATCH if name not in ignore]


def _distinct(series):
    return sorted({str(value) for value in series.dropna()})


def _check_unique(run, side, keys, ignore):
    duplicated = run.points.duplicated(keys, keep=False)
    if duplicated.any():
        spread = ["%s %s" % (name, ", ".join(_distinct(run.points[name]))) for name in ignore]
        raise CompareError(
            "ignoring %s leaves the %s run with several points per match (%s): compare one %s "
            "per side" % (", ".join(ignore), side, "; ".join(spread), " and ".join(ignore)))


def cell_label(row, varying):
    """A cell named by framework, mode and model, plus the cell keys that vary in the runs."""
    names = [name for name in CELL if name in varying or name in ("framework", "mode", "model")]
    return " ".join(str(row[name]) for name in names)


def _matched(base, new, keys, ignore):
    """The outer join of both point tables on ``keys``, in the base run's order, then the new
    run's points that the base lacks."""
    wanted = keys + list(ignore) + SIDE_COLUMNS
    left = base.points[wanted].assign(_order_base=np.arange(len(base.points)))
    right = new.points[wanted].assign(_order_new=np.arange(len(new.points)))
    merged = left.merge(right, on=keys, how="outer", suffixes=("_base", "_new"), indicator=True)
    merged = merged.sort_values(["_order_base", "_order_new"], na_position="last")
    return merged.reset_index(drop=True)


def _side_value(row, name):
    value = row.get(name)
    return None if value is None or (np.ndim(value) == 0 and pd.isna(value)) else value


def _status_text(row, side):
    status = _side_value(row, "status_" + side)
    message = _side_value(row, "message_" + side)
    return "%s %s%s" % (side, status, ": %s" % message if message else "")


def judge(row, min_effect, threshold, confidence, resamples, seed, shift=None):
    """The verdict of one matched row (see VERDICTS) with its ratio and interval; ``shift``: the
    machine's own change over the run (machine_shift), which a change must exceed too, as it
    must the canary's change around the point; None: no machine band."""
    record = dict(ratio=None, ci_low=None, ci_high=None, interval=None, verdict=None, note=None,
                  beyond_threshold=False, canary_ratio=canary_ratio(row))
    # The machine's changes a point's change must exceed: over the run and around the point.
    shifts = (1.0,) if shift is None else (shift, counted_shift(record["canary_ratio"],
                                                                 min_effect))
    if row["_merge"] == "left_only":
        record["verdict"] = ONLY_BASE
        return record
    if row["_merge"] == "right_only":
        record["verdict"] = ONLY_NEW
        return record
    judged = statistics.judge(pairs.side(row, "_new"), pairs.side(row, "_base"),
                              row["statistic"], min_effect, FASTER, SLOWER, shifts, confidence,
                              resamples, seed)
    record["ratio"] = judged.ratio
    if judged.verdict is None:
        base_ok, new_ok = row["status_base"] == "ok", row["status_new"] == "ok"
        record["verdict"] = (NEWLY_FAILING if base_ok else NEWLY_OK if new_ok else NOT_COMPARED)
        record["note"] = "; ".join(_status_text(row, side) for side, ok in
                                   (("base", base_ok), ("new", new_ok)) if not ok)
        return record
    if judged.verdict == statistics.TOO_FEW:
        record["verdict"], record["note"] = UNDECIDED, statistics.TOO_FEW
        return record
    low, high, clear = judged.ci_low, judged.ci_high, judged.clear
    record.update(ci_low=low, ci_high=high,
                  verdict=judged.verdict if clear else judged.decision,
                  interval=statistics.interval_kind(row["replicates_base"],
                                                    row["replicates_new"]))
    if not clear:
        record["note"] = _why_not_clear(judged, min_effect, shifts)
    record["beyond_threshold"] = bool(record["ratio"] > 1.0 and statistics.is_beyond(
        low, high, record["ratio"], statistics.equivalence_band(threshold, shifts)))
    return record


def _why_not_clear(judged, min_effect, shifts):
    """Why a change that is not clear is equivalent or undecided, in a phrase: the minimum
    effect alone decides it so, or only the machine's own change does."""
    low, high, ratio = judged.ci_low, judged.ci_high, judged.ratio
    plain = statistics.decision(low, high, ratio, statistics.equivalence_band(min_effect))
    machine = "the machine's own change (canary x%.2f)" % _largest(shifts)
    if judged.decision == EQUIVALENT:
        return ("within the minimum effect (%g%%)" % (100.0 * min_effect)
                if plain == EQUIVALENT else "within " + machine)
    if not statistics.is_clear(low, high):
        return "interval includes 1"
    return ("interval reaches into the minimum effect (%g%%)" % (100.0 * min_effect)
            if plain != statistics.FASTER else "interval reaches into " + machine)


def canary_ratio(row):
    """new / base of the canary around one matched point (None where a side has none)."""
    speeds = _side_value(row, "canary_ms_base"), _side_value(row, "canary_ms_new")
    if None in speeds or row.get("canary_numpy_base") != row.get("canary_numpy_new"):
        return None
    return float(speeds[1]) / float(speeds[0])


def _largest(shifts):
    """Of several machine shifts, the one furthest from 1."""
    return max(shifts, key=lambda value: abs(np.log(value)))


def point_comparison(base, new, keys, ignore, min_effect, threshold, confidence, resamples,
                     seed, shift=None):
    """One row per point of either run (POINT_COLUMNS, plus the match keys and, for ignored
    keys, each side's value). ``shift``: the run's machine shift, None for no machine band."""
    merged = _matched(base, new, keys, ignore)
    if not (merged["_merge"] == "both").any():
        raise CompareError(
            "no point in common: base has %s, new has %s%s"
            % (_cells_text(base), _cells_text(new),
               "" if "era" in ignore or not _differ(base, new, "era")
               else " (different eras: match across them with --ignore era)"))
    both = pd.concat([base.points, new.points], ignore_index=True)
    varying = [name for name in CELL
               if name not in ignore and both[name].nunique(dropna=False) > 1]
    merged["statistic"] = [contract.reported_statistic(method) for method in _methods(merged, keys)]
    merged["cell"] = [cell_label(_filled(row, ignore), varying) for _, row in merged.iterrows()]
    merged["point"] = ["%dx%d" % (batch, length) for batch, length in
                       zip(merged["batch_size"], merged["seq_len"])]
    for name in ("replicates", "n_samples"):
        for side in ("base", "new"):
            merged["%s_%s" % (name, side)] = merged["%s_%s" % (name, side)].fillna(0).astype(int)
    judged = [judge(row, min_effect, threshold, confidence, resamples, seed, shift)
              for _, row in merged.iterrows()]
    for name in judged[0]:
        merged[name] = [record[name] for record in judged]
    merged["base_ms"] = merged["reported_ms_base"]
    merged["new_ms"] = merged["reported_ms_new"]
    merged["n_base"], merged["n_new"] = merged["n_samples_base"], merged["n_samples_new"]
    merged["min_effect"] = min_effect
    ignored = [name + suffix for name in ignore for suffix in ("_base", "_new")]
    return merged[keys + ignored + POINT_COLUMNS]


def _methods(merged, keys):
    """Each row's method (matched across methods: the new side's, else the base's; the interval
    then applies the new side's statistic to both sides)."""
    if "method" in keys:
        return merged["method"]
    return merged["method_new"].fillna(merged["method_base"])


def _filled(row, ignore):
    """A matched row with each ignored key's value (the new side's, else the base's)."""
    row = row.copy()
    for name in ignore:
        value = row["%s_new" % name]
        row[name] = row["%s_base" % name] if value is None or pd.isna(value) else value
    return row


def _differ(base, new, name):
    return _distinct(base.points[name]) != _distinct(new.points[name])


def _cells_text(run, limit=3):
    cells = run.points.drop_duplicates(CELL)
    names = [" ".join(str(row[name]) for name in CELL) for _, row in cells.iterrows()]
    more = " and %d more" % (len(names) - limit) if len(names) > limit else ""
    return "%d cell(s): %s%s" % (len(names), "; ".join(names[:limit]), more)


def _text(value):
    """An environment value as text: integers without '.0', absent values NOT_RECORDED."""
    if value is None or (np.ndim(value) == 0 and pd.isna(value)):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def environment_names(base, new):
    """The environment columns compared: the contract's (less PER_RUN), then any column of
    either summary outside the contract whose value is the same throughout each process (so a
    hash column added after this code was written is compared too, never a timing column)."""
    names = [declared.name for declared in contract.ENVIRONMENT if declared.name not in PER_RUN]
    extra = sorted((set(base.frame.columns) | set(new.frame.columns)) - set(contract.NAMES))
    process = CELL + ["replicate"]
    for name in extra:
        if name in PER_RUN:
            continue
        constant = True
        for run in (base, new):
            if name not in run.frame.columns:
                continue
            values = run.frame[name]
            if any(np.ndim(value) > 0 for value in values.dropna()):
                constant = False
                break
            texts = run.frame[process].assign(_value=[_text(value) for value in values])
            if (texts.groupby(process, dropna=False)["_value"].nunique() > 1).any():
                constant = False
                break
        if constant:
            names.append(name)
    return names


def _cell_values(run, names, keys):
    """Per cell (``keys``): each environment column as text, the distinct values of its
    replicates joined with '; ' (NOT_RECORDED where absent)."""
    values = {}
    for cell, group in run.frame.groupby(keys, sort=False, dropna=False):
        cell = cell if isinstance(cell, tuple) else (cell,)
        record = {}
        for name in names:
            if name not in group.columns:
                record[name] = NOT_RECORDED
                continue
            texts = [text for text in (_text(value) for value in group[name]) if text is not None]
            distinct = list(dict.fromkeys(texts))
            record[name] = "; ".join(distinct) if distinct else NOT_RECORDED
        values[cell] = record
    return values


def environment_differences(base, new, ignore):
    """One row per environment column and pair of differing values: the column, both values,
    how many matched cells differ so, and which (ENVIRONMENT_COLUMNS); in the contract's order."""
    names = environment_names(base, new)
    keys = [name for name in CELL if name not in ignore]
    before, after = _cell_values(base, names, keys), _cell_values(new, names, keys)
    matched = [cell for cell in before if cell in after]
    varying = [name for name in keys if len({cell[keys.index(name)] for cell in matched}) > 1]
    shown = [keys.index(name) for name in keys
             if name in varying or name in ("framework", "mode", "model")]
    rows = []
    for name in names:
        groups = {}
        for cell in matched:
            pair = (before[cell][name], after[cell][name])
            if pair[0] != pair[1]:
                groups.setdefault(pair, []).append(" ".join(str(cell[i]) for i in shown))
        for (old, value), cells in groups.items():
            which = ("all %d matched cells" % len(matched) if len(cells) == len(matched)
                     else ", ".join(cells))
            rows.append(dict(column=name, base=old, new=value, cells=len(cells), which=which))
    return pd.DataFrame(rows, columns=ENVIRONMENT_COLUMNS)


def hardware(run):
    """Where a run's cells ran, e.g. {'cpu: AMD EPYC 7B13 (2 logical CPUs)'}."""
    found = set()
    for _, row in run.frame.drop_duplicates(["device", "cpu_model", "device_name",
                                             "logical_cpus"]).iterrows():
        name = _text(replicates.machine(row))
        if row["device"] == "cpu":
            name = "%s (%s logical CPUs)" % (name or "unknown CPU",
                                              _text(row["logical_cpus"]) or "?")
        else:
            name = name or "unknown device"
        found.add("%s: %s" % (row["device"], name))
    return found


def started(run):
    """When a run started: its earliest cell's start (UTC), or None where not recorded."""
    times = pd.to_datetime(run.frame["started_at"], utc=True, errors="coerce").dropna()
    return times.min() if len(times) else None


def machine_speed(run):
    """A run's canary: the median over its ok points of the fixed numpy matrix product timed
    around each point (conditions.canary_ms), in ms; None where not recorded (older runs)."""
    canary = _canary(run.frame)["canary_ms"].dropna()
    return float(canary.median()) if len(canary) else None


def counted_shift(ratio, min_effect):
    """A canary ratio new / base as a machine shift: the ratio where it lies beyond the minimum
    effect, else 1.0 (also where it is unknown)."""
    if ratio is None or not np.isfinite(ratio) or ratio <= 0:
        return 1.0
    below, above = statistics.equivalence_band(min_effect)
    return 1.0 if below <= ratio <= above else float(ratio)


def machine_shift(base, new, min_effect):
    """new / base of the two runs' canaries (machine_speed) where they differ by more than the
    minimum effect, else 1.0 (also where either run has no canary, or the runs' canaries were
    timed with different numpy versions). On a shared or cloud machine whole runs shift by 10-30%
    between runs minutes apart; the canary, the same small workload in every run on the cells'
    own cores, sees it, and such a shift lands on every point."""
    speeds = machine_speed(base), machine_speed(new)
    if None in speeds or canary_numpy(base) != canary_numpy(new):
        return 1.0
    return counted_shift(speeds[1] / speeds[0], min_effect)


def machine_line(base, new, shift, min_effect, machine_band=True):
    """The warning for a machine that ran at another speed (None where it did not), and what the
    verdicts do about it: with ``machine_band``, a change within the machine's own is not
    credited to the software."""
    if shift == 1.0:
        return None
    below, above = statistics.equivalence_band(min_effect, shift)
    return ("THE MACHINE CHANGED SPEED: the canary (a fixed numpy matrix product timed around "
            "every point, on the cell's own cores) took %.3g ms in base and %.3g ms in new (new / "
            "base %.2f): the machine or the cores each cell had changed, not only the software. "
            % (machine_speed(base), machine_speed(new), shift)
            + ("Only changes beyond %.2f-%.2f count, and beyond the canary's change around a "
               "point where that is larger (--no-machine-band: the minimum effect alone)."
               % (below, above) if machine_band else
               "The verdicts do not allow for it (--no-machine-band)."))


def warnings_of(base, new, ignore, min_effect, shift=1.0, machine_band=True):
    """Lines to put first: different hardware or methods (loudly), a machine that ran at another
    speed, matching across eras, and a baseline that looks newer than the new run."""
    lines = []
    if hardware(base) != hardware(new):
        lines.append("DIFFERENT HARDWARE: base ran on %s; new on %s. Ratios include the change "
                     "of machine." % ("; ".join(sorted(hardware(base))),
                                     "; ".join(sorted(hardware(new)))))
    if _differ(base, new, "method"):
        lines.append("DIFFERENT METHODS: base timed with %s, new with %s%s."
                     % (", ".join(_distinct(base.points["method"])),
                        ", ".join(_distinct(new.points["method"])),
                        " (matched across methods: --ignore method)" if "method" in ignore
                        else ""))
    machine = machine_line(base, new, shift, min_effect, machine_band)
    if machine:
        lines.append(machine)
    if None not in (machine_speed(base), machine_speed(new)) and (
            canary_numpy(base) != canary_numpy(new)):
        lines.append("The canaries were timed with numpy %s in base and %s in new: their change "
                     "is not the machine's alone, so no machine band."
                     % (canary_numpy(base), canary_numpy(new)))
    for name in ("era", "device", "precision"):
        if name in ignore and _differ(base, new, name):
            lines.append("ACROSS %sS: base %s, new %s (matched on everything but the %s)."
                         % (name.upper(), ", ".join(_distinct(base.points[name])),
                            ", ".join(_distinct(new.points[name])), name))
    first, second = started(base), started(new)
    if first is not None and second is not None and first > second:
        lines.append("The baseline looks newer than the new run (base started %s, new %s): "
                     "the first argument is the baseline."
                     % (first.isoformat(), second.isoformat()))
    return lines


def compare(base, new, ignore=(), min_effect=statistics.MIN_EFFECT, threshold=None,
            confidence=statistics.CONFIDENCE, resamples=statistics.RESAMPLES,
            seed=statistics.SEED, fail_on_new_failures=False, machine_band=True):
    """The comparison of two runs (read_run): points, environment differences, warnings and
    the exit status for CI (0: nothing clearly slower beyond ``threshold``, default
    ``min_effect``; 1: something is, or with ``fail_on_new_failures`` a point newly fails).
    With ``machine_band`` a change must also exceed the machine's own (machine_shift)."""
    ignore = tuple(dict.fromkeys(ignore))
    keys = match_keys(ignore)
    if threshold is not None and not threshold > 0:
        raise CompareError("threshold must be a positive number, not %r" % threshold)
    if not min_effect >= 0:
        raise CompareError("min_effect must be zero or a positive number, not %r" % min_effect)
    threshold = min_effect if threshold is None else threshold
    _check_unique(base, "base", keys, ignore)
    _check_unique(new, "new", keys, ignore)
    moved = machine_shift(base, new, min_effect)
    points = point_comparison(base, new, keys, ignore, min_effect, threshold, confidence,
                              resamples, seed, moved if machine_band else None)
    failing = points["beyond_threshold"].any() or (
        fail_on_new_failures and (points["verdict"] == NEWLY_FAILING).any())
    return Comparison(base, new, ignore, keys, min_effect, threshold, confidence, points,
                      environment_differences(base, new, ignore),
                      warnings_of(base, new, ignore, min_effect, moved, machine_band),
                      moved if machine_band else 1.0,
                      1 if failing else 0, generation_changes(base, new, ignore, min_effect))


def _generation_change(row):
    """What changed in a pair of modes' generation verdict between the runs, in words ('' where
    nothing did)."""
    if row["_merge"] != "both":
        return ONLY_BASE if row["_merge"] == "left_only" else ONLY_NEW
    said = []
    for name, words in generation.FIGURES:
        before, after = (_text(row[name + "_decision" + side]) or "no decision"
                         for side in ("_base", "_new"))
        if before != after:
            said.append("%s: %s -> %s" % (words, before, after))
    before, after = (int(row["tokens_differ" + side]) for side in ("_base", "_new"))
    if before != after:
        said.append("tokens differing at %d -> %d points" % (before, after))
    return "; ".join(said)


def generation_changes(base, new, ignore=(), min_effect=statistics.MIN_EFFECT):
    """Per scope (less ``ignore``) and pair of modes of task generation in either run: each
    run's verdict (GENERATION_SIDES, suffixed _base and _new) and ``change``, what changed in
    words (only in base, only in new, a decision, the points whose tokens differ; '' where
    nothing did). Empty where neither run generated text."""
    keys = [name for name in scopes.SCOPE if name not in ignore] + ["mode_pt", "mode_tf"]
    columns = keys + ["%s%s" % (name, side) for name in GENERATION_SIDES
                      for side in ("_base", "_new")] + ["change"]
    verdicts = [generation.generation_verdict(run.frame, min_effect)[keys + GENERATION_SIDES]
                for run in (base, new)]
    if not len(verdicts[0]) and not len(verdicts[1]):
        return pd.DataFrame(columns=columns)
    merged = verdicts[0].merge(verdicts[1], on=keys, how="outer", suffixes=("_base", "_new"),
                               indicator=True)
    merged["change"] = [_generation_change(row) for _, row in merged.iterrows()]
    return merged[columns]


def verdict_counts(points):
    """Points per verdict, in VERDICTS order (zero counts included)."""
    counts = points["verdict"].value_counts()
    return pd.DataFrame([(verdict, int(counts.get(verdict, 0))) for verdict in VERDICTS],
                        columns=["verdict", "points"])
