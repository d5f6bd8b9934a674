"""Where a run's noise lies: per point, the variance of one sample within a process and of the
figures between processes (both of the logs of the times), and what a sample and a
process-point cost.

These are the figures that size a run (Kalibera and Jones, "Rigorous benchmarking in reasonable
time", ISMM 2013): a point's samples per process (duel.noise_ratio, duel/cell/timing.py
planned_samples) and the processes an open verdict gets (verdicts/settle.py). `duel show` prints
them per pair of framework and mode, and the store keeps the run's, so a reader sees why a cell
got the samples and processes it got.
"""
import numpy as np
import pandas as pd

from duel.cell import timing

from duel.host.tables import replicates

# A median's variance over n samples is about pi / 2 times the mean's (normal samples): what the
# samples inside a process add to the variance of its figure.
MEDIAN_EFFICIENCY = np.pi / 2.0
POINT_KEYS = ["era", "device", "framework", "mode", "precision", "task", "model", "batch_size",
              "seq_len", "method"]
COLUMNS = POINT_KEYS + ["processes", "samples", "sample_var", "between_var", "sample_s",
                        "point_cost_s"]
SUMMARY_COLUMNS = ["framework", "mode", "points", "processes", "sample_sd", "between_sd",
                   "noise_ratio", "sample_s", "point_cost_s", "samples_sized"]


def _components(group):
    logs = [np.log(np.asarray(samples, dtype=float)) for samples in group["samples"]
            if samples is not None and len(samples)]
    within = [float(np.var(values, ddof=1)) for values in logs if values.size > 1]
    sample_var = float(np.mean(within)) if within else np.nan
    medians = [float(np.median(values)) for values in logs]
    between = np.nan
    if len(medians) > 1 and within:
        sizes = np.mean([values.size for values in logs])
        # the spread of process figures less what their own samples put into it
        between = max(0.0, float(np.var(medians, ddof=1)) - MEDIAN_EFFICIENCY * sample_var / sizes)
    cost = group["point_cost_s"].dropna() if "point_cost_s" in group else pd.Series([], dtype=float)
    return {
        "processes": len(logs),
        "samples": int(sum(values.size for values in logs)),
        "sample_var": sample_var,
        "between_var": between,
        "sample_s": float(np.exp(np.median(np.concatenate(logs)))) / 1000.0 if logs else np.nan,
        "point_cost_s": float(cost.median()) if len(cost) else np.nan,
    }


def point_components(frame):
    """Per duel point of the long frame ``frame`` (its counted, ok rows): processes, samples,
    the variance of one sample's log within a process (``sample_var``, pooled over processes),
    the variance between processes' figures less what their samples explain (``between_var``,
    none with one process), a sample's cost (``sample_s``, the median) and a process-point's
    (``point_cost_s``: first call, warm-up, share of start-up; none in rows made before it)."""
    rows = replicates.counted(frame)
    rows = rows[(rows["status"] == "ok") & (rows["method"] == "duel")]
    keys = [key for key in POINT_KEYS if key in rows.columns]
    if rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    records = []
    for key, group in rows.groupby(keys, sort=False, dropna=False):
        record = dict(zip(keys, key))
        record.update(_components(group))
        records.append(record)
    return pd.DataFrame.from_records(records).reindex(columns=COLUMNS)


def sized_samples(point_cost_s, sample_s, noise_ratio):
    """Kalibera and Jones' samples per process-point for these figures (timing.kalibera_jones,
    the rule each point is sized by, before its floor and cap); NaN where one is missing."""
    wanted = timing.kalibera_jones(point_cost_s, sample_s, noise_ratio)
    return np.nan if wanted is None else float(wanted)


def noise_ratio(components):
    """The run's variance of a sample over its variance between processes: the medians over
    its points of each (a point with one process has no between variance and does not count);
    NaN where no point had two processes or processes did not differ beyond their samples."""
    both = components.dropna(subset=["sample_var", "between_var"])
    between = float(both["between_var"].median()) if len(both) else np.nan
    if not between > 0:
        return np.nan
    return float(both["sample_var"].median()) / between


def summary(components):
    """Per pair of framework and mode: points, processes (the most a point had), the typical
    spread of a sample and between processes (standard deviations of the logs: 0.05 is about
    5%), their variance ratio, a sample's and a process-point's cost (s), and the samples per
    process Kalibera and Jones' rule gives for those."""
    records = []
    for (framework, mode), group in components.groupby(["framework", "mode"], sort=False):
        ratio = noise_ratio(group)
        sample_s = float(group["sample_s"].median())
        cost = float(group["point_cost_s"].median()) if group["point_cost_s"].notna().any() \
            else np.nan
        records.append({
            "framework": framework, "mode": mode, "points": int(len(group)),
            "processes": int(group["processes"].max()),
            "sample_sd": float(np.sqrt(group["sample_var"].median())),
            "between_sd": float(np.sqrt(group["between_var"].median())),
            "noise_ratio": ratio, "sample_s": sample_s, "point_cost_s": cost,
            "samples_sized": sized_samples(cost, sample_s, ratio),
        })
    return pd.DataFrame.from_records(records, columns=SUMMARY_COLUMNS)


def _figure(value, form):
    return "n/a" if value is None or pd.isna(value) else form % value


def lines(frame):
    """The noise of a run in a few lines (`duel show`): per pair of framework and mode, the
    spread within and between processes, their ratio, the costs and the samples they size."""
    table = summary(point_components(frame))
    if table.empty:
        return []
    text = ["Noise (logs; Kalibera and Jones' samples per process = sqrt(point cost / sample "
            "cost x sample variance / variance between processes)):"]
    for _, row in table.iterrows():
        text.append(
            "  %s %s: sample sd %s, between processes %s, ratio %s; a sample %s, a process-point "
            "%s: %s samples" % (
                row["framework"], row["mode"], _figure(row["sample_sd"], "%.3f"),
                _figure(row["between_sd"], "%.3f"), _figure(row["noise_ratio"], "%.2f"),
                _figure(row["sample_s"] * 1000.0, "%.1f ms"),
                _figure(row["point_cost_s"], "%.2f s"), _figure(row["samples_sized"], "%d")))
    return text


def run_figures(frame):
    """The run's noise in three numbers, for the store's runs table: the median spread of a
    sample and between processes (sd of the logs) and their variance ratio."""
    components = point_components(frame)
    if components.empty:
        return {"sample_sd": None, "between_sd": None, "noise_ratio": None}
    both = components.dropna(subset=["sample_var", "between_var"])
    ratio = noise_ratio(components)
    return {
        "sample_sd": float(np.sqrt(components["sample_var"].median())),
        "between_sd": float(np.sqrt(both["between_var"].median())) if len(both) else None,
        "noise_ratio": None if pd.isna(ratio) else ratio,
    }
