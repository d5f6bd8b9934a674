"""How sure each comparison is: bootstrap confidence intervals from the raw samples.

For every point that both frameworks ran in the same scope (era, device, precision, task,
method) and on the same model and input, the PyTorch / TensorFlow ratio of the method's
figure (duel: the median; hf2019: the mean, as 2019 reported it) gets a percentile bootstrap
confidence interval: each framework's samples are resampled with replacement, independently,
``RESAMPLES`` times; the statistic of each resample gives a ratio, and the interval is the
central ``CONFIDENCE`` share of those ratios. The difference is *clear* when the interval
excludes 1. The generator is seeded per point, so the same table gives the same intervals.

A point with fewer than ``MIN_SAMPLES`` samples on either side gets no interval (a bootstrap of
one or two samples would claim a certainty it does not have); its ratio is still reported.
"""
import numpy as np
import pandas as pd

from . import history, scopes

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20191015
MIN_SAMPLES = 5
CHUNK_VALUES = 4000000  # resampled values held at once (32 MB of float64)
STATISTICS = {"median": np.median, "mean": np.mean}
PAIR = ["era", "device", "precision", "task", "method", "mode_pt", "mode_tf"]


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


def bootstrap_interval(samples, statistic="median", confidence=CONFIDENCE,
                       resamples=RESAMPLES, seed=SEED):
    """Percentile bootstrap interval of one series' statistic: (low, high)."""
    rng = np.random.default_rng(seed)
    return _interval(_resampled(samples, STATISTICS[statistic], resamples, rng), confidence)


def bootstrap_ratio(numerator, denominator, statistic="median", confidence=CONFIDENCE,
                    resamples=RESAMPLES, seed=SEED):
    """Percentile bootstrap interval of statistic(numerator) / statistic(denominator).

    Both series are resampled independently (they were measured independently). Returns
    (low, high).
    """
    rng = np.random.default_rng(seed)
    function = STATISTICS[statistic]
    top = _resampled(numerator, function, resamples, rng)
    bottom = _resampled(denominator, function, resamples, rng)
    return _interval(top / bottom, confidence)


def is_clear(low, high):
    """Whether an interval of a ratio excludes 1 (the two figures clearly differ)."""
    return low > 1.0 or high < 1.0


def _count(samples):
    """How many samples a point has (none where it did not run)."""
    return len(samples) if hasattr(samples, "__len__") else 0


def _not_ok(status, framework):
    if status == "ok":
        return None
    return "%s %s" % (scopes.FRAMEWORK_NAMES[framework], scopes.status_label(status))


def _judge(row, confidence, resamples, seed):
    """The ratio, interval, clear flag and verdict of one paired point."""
    record = {"ratio": None, "ci_low": None, "ci_high": None, "clear": None}
    missing = [text for text in (_not_ok(row["status_pt"], "pytorch"),
                                 _not_ok(row["status_tf"], "tensorflow")) if text]
    if missing:
        record["verdict"] = "not compared: " + ", ".join(missing)
        return record
    record["ratio"] = float(row["reported_ms_pt"]) / float(row["reported_ms_tf"])
    if min(row["n_pt"], row["n_tf"]) < MIN_SAMPLES:
        record["verdict"] = "too few samples for an interval (fewer than %d)" % MIN_SAMPLES
        return record
    low, high = bootstrap_ratio(row["samples_pt"], row["samples_tf"], row["statistic"],
                                confidence, resamples, seed)
    record.update(ci_low=low, ci_high=high, clear="yes" if is_clear(low, high) else "no")
    if record["clear"] == "no":
        record["verdict"] = "no clear difference"
    else:
        record["verdict"] = "PyTorch faster" if high < 1.0 else "TensorFlow faster"
    return record


def point_ratios(frame, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """One row per paired point and pair of modes: both figures, ratio, interval, verdict.

    Columns: era, device, precision, task, method, mode_pt, mode_tf, model, batch_size,
    seq_len, point, statistic, pytorch_ms, tensorflow_ms, n_pt, n_tf, ratio, ci_low, ci_high,
    clear ('yes', 'no', or empty where no interval could be made), verdict.
    """
    frame = scopes.prepared(frame)
    keys = ["era", "device", "precision", "task", "method", "model", "batch_size", "seq_len",
            "point"]
    wanted = keys + ["mode", "status", "samples", "reported_ms"]
    pytorch = frame[frame["framework"] == "pytorch"][wanted]
    tensorflow = frame[frame["framework"] == "tensorflow"][wanted]
    merged = pytorch.merge(tensorflow, on=keys, suffixes=("_pt", "_tf"))
    columns = PAIR + ["model", "batch_size", "seq_len", "point", "statistic", "pytorch_ms",
                      "tensorflow_ms", "n_pt", "n_tf", "ratio", "ci_low", "ci_high", "clear",
                      "verdict"]
    if merged.empty:
        return pd.DataFrame(columns=columns)
    merged["statistic"] = [scopes.statistic_name(method) for method in merged["method"]]
    merged["n_pt"] = [_count(samples) for samples in merged["samples_pt"]]
    merged["n_tf"] = [_count(samples) for samples in merged["samples_tf"]]
    judged = [_judge(row, confidence, resamples, seed) for _, row in merged.iterrows()]
    for name in ("ratio", "ci_low", "ci_high", "clear", "verdict"):
        merged[name] = [record[name] for record in judged]
    merged["pytorch_ms"] = merged["reported_ms_pt"]
    merged["tensorflow_ms"] = merged["reported_ms_tf"]
    blocks = [group for _, group in merged[columns].groupby(PAIR, sort=False)]
    return pd.concat(blocks, ignore_index=True)  # one block per pair, models as they ran


def pair_summary(ratios):
    """Per scope and pair of modes: how many points each framework clearly wins.

    ``geomean_ratio`` is the geometric mean of the compared points' ratios (< 1: PyTorch faster
    on the typical point).
    """
    rows = []
    for values, group in ratios.groupby(PAIR, sort=False):
        compared = group.dropna(subset=["ratio"])
        record = dict(zip(PAIR, values))
        record.update(
            points=int(len(group)),
            compared=int(len(compared)),
            pytorch_clearly_faster=int((group["verdict"] == "PyTorch faster").sum()),
            tensorflow_clearly_faster=int((group["verdict"] == "TensorFlow faster").sum()),
            not_clear=int((group["clear"] == "no").sum()),
            geomean_ratio=float(np.exp(np.log(compared["ratio"].astype(float)).mean()))
            if len(compared) else None,
        )
        rows.append(record)
    return pd.DataFrame(rows, columns=PAIR + [
        "points", "compared", "pytorch_clearly_faster", "tensorflow_clearly_faster", "not_clear",
        "geomean_ratio"])


def headline(frame):
    """The 2019 article's headline table: mean over models per framework and device (the 2019
    aggregation, seconds), beside the median, the published figures first (history.py)."""
    return history.historical_table(scopes.prepared(frame))
