"""How sure each comparison is: intervals that see the noise between processes.

For every point that both frameworks ran in the same scope (era, device, precision, task,
method) and on the same model and input, the PyTorch / TensorFlow ratio of the method's pooled
figure (replicates.py: duel, the median of the replicate medians; hf2019, the mean of every
sample, as 2019 reported it) gets an interval.

With several replicates (separate processes) on both sides the interval is Welch's t on the
logs of the processes' figures: on these machines whole processes differ far more than the
samples inside one, so the process is the unit, and with three to eight of them a t interval
holds a rerun's ratio about as often as it says (the A/A benchmark measures that coverage); a
bootstrap over so few processes is too narrow. With one replicate on either side only the
samples of one process can be resampled (a percentile bootstrap), and every table says so
(``interval``).

Each judged ratio gets one of three decisions (the decision rule of an interval against a
region of practical equivalence, the band of differences smaller than ``min_effect``, e):

- *faster*: the whole interval, and the ratio with it, lies beyond the band, above 1 + e or
  below 1 / (1 + e): a *clear* difference, and the only one;
- *equivalent*: the whole interval lies inside the band: the evidence says there is no
  difference of e or more, which is an answer too;
- *undecided*: the interval reaches across an edge of the band (one that excludes 1 but
  reaches into the band included): the evidence says neither, and more processes may.

The bootstrap's generator is seeded, so the same table gives the same intervals. A point with
fewer than ``MIN_SAMPLES`` samples on a side gets no interval and no decision; its ratio is
still reported.

An interval between processes takes them as draws from one machine, so a pair is not judged (no
interval, no verdict; its ratio is still reported) where a side's processes ran on more than one
CPU (or GPU) model or the two sides on different ones: such processes differ by the machine, not
only by the noise (machines_apart).
"""
from collections import namedtuple

import numpy as np
import pandas as pd
import scipy.stats

from duel.cell import contract, frameworks

from duel.host.tables import published_2019, replicates, scopes
from duel.host.verdicts import pairs

CONFIDENCE = 0.95
MIN_EFFECT = 0.05  # config key min_effect
RESAMPLES = 2000
SEED = 20191015
MIN_SAMPLES = 5
CHUNK_VALUES = 4000000  # resampled values held at once (32 MB of float64)
STATISTICS = {"median": np.median, "mean": np.mean}
NOISY_SPREAD = replicates.NOISY_SPREAD
BETWEEN = "between processes"
WITHIN = "within one process only"


def _resampled(samples, statistic, resamples, rng):
    """``statistic`` of ``resamples`` bootstrap resamples of ``samples``, in bounded memory."""
    values = np.asarray(samples, dtype=np.float64)
    chunk = max(1, CHUNK_VALUES // values.size)
    out = []
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        indices = rng.integers(0, values.size, size=(count, values.size))
        out.append(statistic(values[indices], axis=1))
    return np.concatenate(out)


def _interval(values, confidence):
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _as_replicates(series):
    """A list of sample arrays, one per process: a flat series is one replicate."""
    series = list(series)
    if series and np.ndim(series[0]) == 0:
        return [np.asarray(series, dtype=np.float64)]
    return [np.asarray(samples, dtype=np.float64) for samples in series]


def resampled_figure(series, statistic, resamples, rng):
    """``resamples`` bootstrap values of a point's pooled figure.

    ``series``: one replicate's samples, or a list of them. One replicate: its samples are
    resampled. Several: the replicates are drawn with replacement, then each drawn replicate's
    samples (hierarchical bootstrap), and the draws pooled as replicates.point_table does.
    """
    groups = _as_replicates(series)
    function = STATISTICS[statistic]
    if len(groups) == 1:
        return _resampled(groups[0], function, resamples, rng)
    count = len(groups)
    chosen = rng.integers(0, count, size=(resamples, count))
    sizes = np.array([group.size for group in groups], dtype=np.float64)
    figures = np.empty((resamples, count))
    for slot in range(count):  # an independent within-replicate resample for every slot
        within = np.column_stack([_resampled(group, function, resamples, rng)
                                  for group in groups])
        figures[:, slot] = within[np.arange(resamples), chosen[:, slot]]
    return replicates.pooled(figures, sizes[chosen], statistic)


def bootstrap_interval(series, statistic="median", confidence=CONFIDENCE,
                       resamples=RESAMPLES, seed=SEED):
    """Percentile bootstrap interval of one point's figure: (low, high). ``series``: samples,
    or a list of them per replicate (then hierarchical)."""
    rng = np.random.default_rng(seed)
    return _interval(resampled_figure(series, statistic, resamples, rng), confidence)


def bootstrap_ratio(numerator, denominator, statistic="median", confidence=CONFIDENCE,
                    resamples=RESAMPLES, seed=SEED):
    """Percentile bootstrap interval of figure(numerator) / figure(denominator): (low, high).

    Each side is samples or a list of samples per replicate; the sides are resampled
    independently (they were measured independently), hierarchically where they have several
    replicates.
    """
    rng = np.random.default_rng(seed)
    top = resampled_figure(numerator, statistic, resamples, rng)
    bottom = resampled_figure(denominator, statistic, resamples, rng)
    return _interval(top / bottom, confidence)


def t_quantile(df, confidence=CONFIDENCE):
    """Student's t quantile that bounds a two-sided ``confidence`` interval on ``df`` degrees of
    freedom (12.706 at 95% and 1), any level, any positive ``df`` (an array too; NaN at 0 or
    below)."""
    return scipy.stats.t.ppf(0.5 + confidence / 2.0, np.asarray(df, dtype=np.float64))


def replicate_figures(series, statistic):
    """Each replicate's own figure (its median or mean) from its samples."""
    function = STATISTICS[statistic]
    return np.array([function(group) for group in _as_replicates(series)])


def welch_ratio(top_figures, bottom_figures, ratio, confidence=CONFIDENCE):
    """Welch's t interval of a ratio from each side's per-process figures (on their logs),
    around ``ratio``: (low, high), or None with fewer than two processes on a side."""
    a, b = (np.log(np.asarray(side, dtype=np.float64)) for side in (top_figures, bottom_figures))
    if a.size < 2 or b.size < 2:
        return None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return ratio, ratio
    # Welch's degrees of freedom, rounded down (past float error): the interval errs wide, never
    # narrow (with two processes a side they fall between 1 and 2, where t drops from 12.7 to 4.3).
    df = np.floor((va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)) + 1e-9)
    half = t_quantile(df, confidence) * np.sqrt(va + vb)
    return float(ratio * np.exp(-half)), float(ratio * np.exp(half))


def figure_interval(figures, confidence=CONFIDENCE):
    """Student's t interval of one side's figure from its per-process figures (on their logs,
    around their geometric mean): (low, high), or None with fewer than two processes."""
    logs = np.log(np.asarray(figures, dtype=np.float64))
    if logs.size < 2:
        return None
    low, high = log_t_intervals(logs.mean(), logs.std(ddof=1), logs.size, confidence)
    return float(low), float(high)


def log_t_intervals(log_means, log_stds, counts, confidence=CONFIDENCE):
    """figure_interval for many sides at once, from each one's mean and standard deviation
    (ddof 1) of its processes' log figures and their count: (lows, highs), NaN with fewer
    than two processes."""
    counts = np.asarray(counts)
    t = t_quantile(np.maximum(counts, 2) - 1, confidence)
    half = np.where(counts >= 2, t * np.asarray(log_stds) / np.sqrt(np.maximum(counts, 1)),
                    np.nan)
    return np.exp(np.asarray(log_means) - half), np.exp(np.asarray(log_means) + half)


def interval_kind(replicates_a, replicates_b):
    """'between processes' when both sides have several replicates, else 'within one process
    only' (the interval then misses what differs between processes)."""
    return BETWEEN if min(replicates_a, replicates_b) >= 2 else WITHIN


def equivalence_band(min_effect, shift=1.0):
    """(below, above): the ratios too close to 1 to call a difference: within ``min_effect``
    of 1 and, where the machine ran ``shift`` times slower (or faster) between the two sides,
    within min_effect of that shift too (``shift`` may be several ratios: the band spans them
    all, e.g. the machine's change over the whole run and around one point)."""
    shifts = [1.0] + [float(value) for value in np.atleast_1d(shift)]
    return (min(shifts) / (1.0 + min_effect), max(shifts) * (1.0 + min_effect))


def is_beyond(low, high, ratio, band):
    """Whether the whole interval (low, high), and ``ratio`` when given, lies outside ``band``."""
    below, above = band
    if low > above:
        return ratio is None or ratio > above
    if high < below:
        return ratio is None or ratio < below
    return False


def is_clear(low, high, ratio=None, min_effect=0.0):
    """Whether a ratio clearly differs from 1 by at least ``min_effect``: its whole interval
    lies above 1 + min_effect or below 1 / (1 + min_effect), and so does ``ratio`` when given.
    With min_effect 0: the interval excludes 1."""
    return is_beyond(low, high, ratio, equivalence_band(min_effect))


# The three decisions on a judged ratio (the module's docstring says why three).
FASTER, EQUIVALENT, UNDECIDED = "faster", "equivalent", "undecided"
DECISIONS = (FASTER, EQUIVALENT, UNDECIDED)


def decision(low, high, ratio, band):
    """The decision on a ratio and its interval (low, high) against ``band``
    (equivalence_band): FASTER beyond it (is_beyond), EQUIVALENT where the whole interval lies
    inside it, UNDECIDED where the interval reaches across an edge."""
    if is_beyond(low, high, ratio, band):
        return FASTER
    below, above = band
    return EQUIVALENT if below <= low and high <= above else UNDECIDED


def equivalent_words(min_effect, shift=1.0):
    """The verdict of an equivalent ratio: 'equivalent (within 5%)', naming the machine's own
    change where it widened the band."""
    widened = equivalence_band(min_effect, shift) != equivalence_band(min_effect)
    return "%s (within %g%%%s)" % (EQUIVALENT, 100.0 * min_effect,
                                    " and the machine's own change" if widened else "")


def decided(ratio, low, high, min_effect, faster_below, faster_above, shift=1.0):
    """(decision, verdict) of a ratio and its interval: ``faster_below`` names the side that is
    faster when the ratio is clearly below 1, ``faster_above`` when clearly above; else
    equivalent_words or UNDECIDED. ``shift``: the machine's own change between the two sides,
    which the band spans too (equivalence_band)."""
    found = decision(low, high, ratio, equivalence_band(min_effect, shift))
    if found == FASTER:
        return found, faster_below if ratio < 1.0 else faster_above
    if found == EQUIVALENT:
        return found, equivalent_words(min_effect, shift)
    return found, UNDECIDED


def verdict(ratio, low, high, min_effect, faster_below, faster_above, shift=1.0):
    """(clear, verdict) of a ratio and its interval (decided), ``clear`` True only where the
    decision is FASTER."""
    found, text = decided(ratio, low, high, min_effect, faster_below, faster_above, shift)
    return found == FASTER, text


def _not_ok(status, framework):
    if status == "ok":
        return None
    return "%s %s" % (frameworks.label(framework), scopes.status_label(status))


# What the judge found of two sides (pairs.Side): ``verdict`` None where a side is not ok
# (each caller words that), TOO_FEW where a side has too few samples for an interval;
# ``clear`` and ``decision`` None wherever there is no interval.
Judgement = namedtuple("Judgement", "ratio ci_low ci_high clear verdict decision")
TOO_FEW = "too few samples for an interval (fewer than %d)" % MIN_SAMPLES
# How the ratio tables (ratios.csv, the statistics sheet and page) write ``clear``: empty
# where no interval could be made.
CLEAR_WORDS = {True: "yes", False: "no", None: None}
# What "clear" means, in the one sentence every caption, sheet note and the README quote.
CLEAR_MEANING = (
    "A difference is clear only when the whole %d%% interval of its ratio (Welch's t over "
    "the processes, or a bootstrap within one process where a side has one), and the ratio "
    "itself, lie at least min_effect away from 1: above 1 + min_effect or below "
    "1 / (1 + min_effect)." % round(CONFIDENCE * 100))
# What the other two decisions mean, said after CLEAR_MEANING.
DECISIONS_MEANING = (
    "A clear difference is decided 'faster'; a difference whose whole interval lies within "
    "that band is 'equivalent' (no difference of min_effect or more); one whose interval "
    "reaches across an edge of the band is 'undecided' (more processes may decide it).")


def judge(top, bottom, statistic, min_effect, faster_below, faster_above, shift=1.0,
          confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """The one judge of a pair of points (pairs.Side): the ratio top / bottom of their figures,
    its interval (between processes, or within one), decision and verdict (see decided;
    ``faster_below`` and ``faster_above`` name the winner, ``shift`` the machine's own change).
    Every comparison Duel reports, between the frameworks of a run and between two runs, is
    judged here."""
    if top.status != "ok" or bottom.status != "ok":
        return Judgement(None, None, None, None, None, None)
    ratio = float(top.reported_ms) / float(bottom.reported_ms)
    if min(top.n_samples, bottom.n_samples) < MIN_SAMPLES:
        return Judgement(ratio, None, None, None, TOO_FEW, None)
    interval = welch_ratio(replicate_figures(top.replicate_samples, statistic),
                           replicate_figures(bottom.replicate_samples, statistic), ratio,
                           confidence)
    if interval is None:  # one process on a side: only its samples can be resampled
        interval = bootstrap_ratio(list(top.replicate_samples),
                                   list(bottom.replicate_samples), statistic, confidence,
                                   resamples, seed)
    low, high = interval
    found, text = decided(ratio, low, high, min_effect, faster_below, faster_above, shift)
    return Judgement(ratio, low, high, found == FASTER, text, found)


# The columns a pair needs to say where its sides ran (machines_apart).
MACHINE_CARRY = ["machines", "cpu_model", "device_name"]


def _told_apart(names):
    """Whether two sides' machine names (replicates.machine) name two different models; a side
    whose model was not recorded is not told apart from any."""
    named = [name for name in names
             if name is not None and not pd.isna(name) and name != replicates.UNNAMED_GPU]
    return len(named) == 2 and named[0] != named[1]


def machines_apart(row, pair=pairs.SHOWN):
    """Why a paired row of framework pair ``pair`` (its MACHINE_CARRY columns per side) cannot
    be judged over processes, in a phrase, or None: a side's processes ran on several machines,
    or the two sides on different ones (an interval between processes assumes draws from one
    machine)."""
    kind = "CPU models" if row["device"] == "cpu" else "GPU models"
    names = pair.labels
    counts = [row["machines" + suffix] for suffix in pair.suffixes]
    mixed = ["%s's processes ran on %d %s" % (name, count, kind)
             for name, count in zip(names, counts) if not pd.isna(count) and count > 1]
    if mixed:
        return ", ".join(mixed)
    where = [replicates.machine({"device": row["device"], "cpu_model": row["cpu_model" + suffix],
                                 "device_name": row["device_name" + suffix]})
             for suffix in pair.suffixes]
    if _told_apart(where):
        return "%s ran on %s, %s on %s" % (names[0], where[0], names[1], where[1])
    return None


def _judge(row, pair, confidence, resamples, seed, min_effect):
    """The ratio, interval, clear flag, decision and verdict of one point of framework pair
    ``pair``."""
    top, bottom = (pairs.side(row, suffix) for suffix in pair.suffixes)
    judged = judge(top, bottom, row["statistic"], min_effect, *pair.faster(),
                   confidence=confidence, resamples=resamples, seed=seed)
    apart = machines_apart(row, pair) if judged.verdict is not None else None
    if apart:  # the ratio stands; an interval over processes of two machines would not
        judged = Judgement(judged.ratio, None, None, None, "not judged: " + apart, None)
    record = judged._asdict()
    record["clear"] = CLEAR_WORDS[judged.clear]
    if judged.verdict is None:
        record["verdict"] = "not compared: " + ", ".join(filter(None, (
            _not_ok(row["status" + suffix], framework)
            for framework, suffix in zip(pair.frameworks, pair.suffixes))))
    return record


def ratio_columns(pair=pairs.SHOWN):
    """The columns of framework pair ``pair``'s rows in a ratio table (point_ratios)."""
    return pair.keys + [
        "model", "batch_size", "seq_len", "point", "statistic"] + [
        name + "_ms" for name in pair.frameworks] + [
        "replicates" + suffix for suffix in pair.suffixes] + [
        "n" + suffix for suffix in pair.suffixes] + [
        "ratio", "ci_low", "ci_high", "interval", "min_effect", "clear", "decision", "verdict",
        "disturbed"]


RATIO_COLUMNS = ratio_columns()


def _disturbed(pair, *reasons):
    """Which side of framework pair ``pair`` was still disturbed when it was last measured,
    and why; None."""
    text = ["%s: %s" % (side, reason) for side, reason in zip(pair.frameworks, reasons)
            if reason is not None and not pd.isna(reason)]
    return "; ".join(text) or None


def _with_machines(points):
    """A point table with MACHINE_CARRY, whatever wrote it: one unrecorded machine where a
    column is missing (a point table made before ``machines``)."""
    missing = dict((name, 1 if name == "machines" else None) for name in MACHINE_CARRY
                   if name not in points.columns)
    return points.assign(**missing) if missing else points


def point_ratios(frame, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED,
                 min_effect=MIN_EFFECT):
    """One row per paired point and pair of modes: both figures, ratio, interval, verdict.

    Columns (RATIO_COLUMNS): the pair's scope and modes, the point, ``statistic``, both
    figures, the replicates (processes) and samples behind each, ``ratio``, ``ci_low``,
    ``ci_high``, ``interval`` (between processes, or within one process only), ``min_effect``,
    ``clear`` ('yes', 'no', or empty where no interval could be made, or none may be made over
    processes of several machines: machines_apart), ``decision`` (DECISIONS, empty where
    ``clear`` is), ``verdict`` and
    ``disturbed`` (a side still disturbed after its last measurement: its figure counts, but it
    is weaker evidence).
    """
    frame = _with_machines(scopes.prepared(frame))
    blocks = []
    for pair in pairs.framework_pairs(frame["framework"].unique() if len(frame) else []):
        merged = pairs.framework_ratios(frame, carry=pairs.JUDGED + ["replicates", "disturbed"]
                                        + MACHINE_CARRY, pair=pair)
        if merged.empty:
            continue
        merged["statistic"] = [contract.reported_statistic(method)
                               for method in merged["method"]]
        for suffix in pair.suffixes:
            merged["n" + suffix] = merged["n_samples" + suffix].fillna(0).astype(int)
        merged["interval"] = [interval_kind(a, b) for a, b in zip(
            *(merged["replicates" + suffix] for suffix in pair.suffixes))]
        merged["min_effect"] = min_effect
        judged = [_judge(row, pair, confidence, resamples, seed, min_effect)
                  for _, row in merged.iterrows()]
        for name in ("ratio", "ci_low", "ci_high", "clear", "decision", "verdict"):
            merged[name] = [record[name] for record in judged]
        merged["disturbed"] = [_disturbed(pair, *reasons) for reasons in zip(
            *(merged["disturbed" + suffix] for suffix in pair.suffixes))]
        for name, suffix in zip(pair.frameworks, pair.suffixes):
            merged[name + "_ms"] = merged["reported_ms" + suffix]
        blocks += [group for _, group in merged[ratio_columns(pair)].groupby(pair.keys,
                                                                              sort=False)]
    if not blocks:
        return pd.DataFrame(columns=RATIO_COLUMNS)
    return pd.concat(blocks, ignore_index=True)  # one block per pair, models as they ran


def geomean_interval(paired, statistic="median", confidence=CONFIDENCE, resamples=RESAMPLES,
                     seed=SEED, pair=pairs.SHOWN):
    """Percentile bootstrap interval of the geometric-mean ratio of a pair's points: (low,
    high), or (None, None) without several processes on both sides.

    ``paired``: one row per point of framework pair ``pair``, with each side's replicate figures
    and samples (``replicate_figures_pt``, ``replicate_samples_tf``, ...) and ``model``. A
    process measured every point of its cell, so whole processes are resampled: per resample,
    each model's cell on each side draws its replicates with replacement once, and every point
    of that cell pools the same draw. The points' ratios then move together as they did between
    runs.
    """
    rng = np.random.default_rng(seed)
    logs = np.zeros(resamples)
    counted = 0
    for _, cell in paired.groupby("model", sort=False):
        draws = {}
        for side in pair.suffixes:
            figures = [np.asarray(value, dtype=np.float64)
                       for value in cell["replicate_figures" + side]]
            sizes = [np.array([len(samples) for samples in value], dtype=np.float64)
                     for value in cell["replicate_samples" + side]]
            count = min(len(value) for value in figures)
            if count < 2:
                return None, None
            draws[side] = (figures, sizes, rng.integers(0, count, size=(resamples, count)))
        for index in range(len(cell)):
            top, bottom = (replicates.pooled(figures[index][chosen], sizes[index][chosen],
                                             statistic)
                           for figures, sizes, chosen in map(draws.get, pair.suffixes))
            logs += np.log(top / bottom)
            counted += 1
    if not counted:
        return None, None
    low, high = _interval(np.exp(logs / counted), confidence)
    return low, high


def decisions(ratios):
    """The decision of each row of a ratio table (point_ratios): its ``decision``, or in a table
    written before that column, the decision remade from its interval and ``min_effect`` (a
    run's own verdicts have no machine shift); None where ``clear`` is empty."""
    if "decision" in ratios.columns:
        return [None if pd.isna(value) else value for value in ratios["decision"]]
    effects = ratios["min_effect"] if "min_effect" in ratios.columns else [None] * len(ratios)
    return [decision(float(low), float(high), float(ratio), equivalence_band(
        MIN_EFFECT if effect is None or pd.isna(effect) else float(effect)))
        if clear in ("yes", "no") else None
        for clear, low, high, ratio, effect in zip(ratios["clear"], ratios["ci_low"],
                                                   ratios["ci_high"], ratios["ratio"], effects)]


def pair_summary(ratios, points=None):
    """Per framework pair, scope and pair of modes: how many points each framework clearly
    wins, how many are equivalent and how many undecided.

    ``geomean_ratio`` is the geometric mean of the compared points' ratios (< 1: the top
    framework, PyTorch of PyTorch/TensorFlow, faster on the typical point); with the point table
    ``points``, ``geomean_low`` and ``geomean_high`` are its interval over whole processes
    (geomean_interval), none where a point is not judged for its machines (machines_apart).
    ``decided`` counts the points either faster or equivalent; ``not_clear``, equivalent and
    undecided together, is kept for the readers of runs stored before the two were told apart.
    None counts a point not judged. A pair's counts are named by its frameworks
    (``pytorch_clearly_faster``, ``replicates_pt``).
    """
    rows, columns = [], []
    for pair, table in pairs.in_table(ratios):
        intervals = _geomean_intervals(points, pair) if points is not None else {}
        columns += [name for name in summary_columns(pair) if name not in columns]
        for values, group in table.groupby(pair.keys, sort=False):
            compared = group.dropna(subset=["ratio"])
            found = decisions(group)
            record = dict(zip(pair.keys, values))
            record.update(
                replicates=int(min(group["replicates" + suffix].min()
                                   for suffix in pair.suffixes)),
                interval=WITHIN if (group["interval"] == WITHIN).any() else BETWEEN,
                points=int(len(group)),
                compared=int(len(compared)),
                equivalent=found.count(EQUIVALENT),
                undecided=found.count(UNDECIDED),
                disturbed=int(group["disturbed"].notna().sum()) if "disturbed" in group else 0,
                geomean_ratio=float(np.exp(np.log(compared["ratio"].astype(float)).mean()))
                if len(compared) else None,
            )
            for name, words in zip(pair.frameworks, pair.faster()):
                record[name + "_clearly_faster"] = int((group["verdict"] == words).sum())
            record["decided"] = found.count(FASTER) + record["equivalent"]
            record["not_clear"] = record["equivalent"] + record["undecided"]
            record["geomean_low"], record["geomean_high"] = intervals.get(values, (None, None))
            rows.append(record)
    return pd.DataFrame(rows, columns=columns or summary_columns(pairs.SHOWN))


def summary_columns(pair=pairs.SHOWN):
    """The columns of framework pair ``pair``'s rows in a pair_summary table."""
    return pair.keys + ["replicates", "interval", "points", "compared"] + [
        name + "_clearly_faster" for name in pair.frameworks] + [
        "equivalent", "undecided", "decided", "not_clear", "disturbed", "geomean_ratio",
        "geomean_low", "geomean_high"]


def _geomean_intervals(points, pair):
    """{pair of modes' keys: geomean_interval} of framework pair ``pair`` in point table
    ``points``, none where a point's processes ran on several machines (machines_apart)."""
    paired = pairs.framework_ratios(_with_machines(scopes.prepared(points)),
                                    carry=["replicate_figures", "replicate_samples"]
                                    + MACHINE_CARRY, pair=pair)
    ok = (paired["status" + pair.suffixes[0]] == "ok") & (paired["status" + pair.suffixes[1]]
                                                         == "ok")
    intervals = {}
    for values, group in paired[ok].groupby(pair.keys, sort=False):
        if any(machines_apart(row, pair) for _, row in group.iterrows()):
            continue  # processes of several machines: no interval over them
        statistic = contract.reported_statistic(group["method"].iloc[0])
        intervals[values] = geomean_interval(group, statistic, pair=pair)
    return intervals


def count_words(pair=pairs.SHOWN):
    """[(column, words)]: a pair_summary row's counts of framework pair ``pair`` in the words
    the verdict lines and the pages show."""
    return [(name + "_clearly_faster", words)
            for name, words in zip(pair.frameworks, pair.faster())] + [
        ("equivalent", EQUIVALENT), ("undecided", UNDECIDED)]


def pair_counts(record, pair=pairs.SHOWN):
    """[(words, count)] of a pair_summary row of framework pair ``pair`` (count_words); a row
    stored before equivalent and undecided were told apart gives its ``not_clear`` as 'not
    clear'."""
    def count(name):
        value = record.get(name)
        return None if value is None or pd.isna(value) else int(value)
    counted = [(words, count(name)) for name, words in count_words(pair)]
    if None in (counted[2][1], counted[3][1]):
        return counted[:2] + [("not clear", count("not_clear") or 0)]
    return counted


def geomean_winner(record, min_effect, pair=pairs.SHOWN):
    """The framework of framework pair ``pair`` that a pair_summary row's geometric-mean ratio
    clearly favours (its name), by its interval over processes (verdict); None where that is
    not clear or there is no interval."""
    low, high = record.get("geomean_low"), record.get("geomean_high")
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    clear, winner = verdict(float(record["geomean_ratio"]), low, high, min_effect,
                            *pair.frameworks)
    return winner if clear else None


def method_text(min_effect=MIN_EFFECT):
    """How the ratios and verdicts are made, in one paragraph (the sheet and the page)."""
    return (
        "PyTorch / TensorFlow ratio of each method's figure per point (duel: the median of the "
        "replicates' medians; timeit: the mean of every sample, as 2019); < 1: PyTorch faster. "
        "Interval: %d%%, Welch's t on the logs of the replicates' figures (separate "
        "processes) where both sides have several; else a percentile bootstrap of one "
        "process's samples, %d resamples, seed %d (column interval). %s Here min_effect is "
        "%g%%. No interval with fewer than %d samples." % (
            round(CONFIDENCE * 100), RESAMPLES, SEED, CLEAR_MEANING + " " + DECISIONS_MEANING,
            100 * min_effect, MIN_SAMPLES))


NOISE_COLUMNS = scopes.SCOPE + ["framework", "mode", "model", "batch_size", "seq_len", "point",
                                "replicates", "replicate_figures", "replicate_spread",
                                "replicate_cv", "noisy"]


def noise_table(frame):
    """Per point, how much its processes differed: each replicate's figure (ms), max / min of
    them (``replicate_spread``), their coefficient of variation, and ``noisy`` beyond 10%."""
    table = scopes.prepared(frame)
    table = table[table["status"] == "ok"][NOISE_COLUMNS].copy()
    table["replicate_figures"] = [
        ", ".join("%.4g" % value for value in figures) if figures is not None else None
        for figures in table["replicate_figures"]]
    return table.reset_index(drop=True)


def headline(frame):
    """The 2019 article's headline table: mean over models per framework and device (the 2019
    aggregation, seconds), beside the median, the published figures first (published_2019.py)."""
    return published_2019.historical_table(scopes.prepared(frame))
