"""One row per point: the replicates of a point (separate processes of one cell) combined.

Every report reads this table (through ``summary.with_reported``), so none of them can keep
"the last replicate" by accident; the spreadsheet's ``long`` sheet and ``summary.parquet`` keep
every replicate's row, and every attempt's: a disturbed row that ran again in a fresh process is
not ``counted`` (duel/cell/attempts.py) and has no part in the point.

Per point:
- ``replicates``: how many processes ran it; ``replicate_samples``: each one's raw samples
  (a list per replicate, for the hierarchical bootstrap in statistics.py);
  ``replicate_figures``: each one's figure (duel: its median; timeit: its mean).
- The pooled figure: duel, ``median`` = the median of the replicate medians (a slow process
  counts once, however many samples it took); timeit, ``mean`` = the mean over every sample of
  every replicate (the replicates' 2019 means weighted by their sample counts), as the 2019
  script aggregated its repeats. ``samples`` holds all samples; std, min, max and p90 are
  theirs.
- The spread between processes: ``replicate_spread`` = max / min of the replicate figures
  (1.0 = identical), ``replicate_cv`` their coefficient of variation (ddof=1); both empty with
  one replicate. ``noisy`` marks a spread beyond NOISY_SPREAD.
- ``status``: ``ok`` only when every replicate is; otherwise the worst status seen, with the
  message of the first replicate that had it ("replicate 2: ..."). Peak memory is the largest
  of the replicates; the environment columns keep a single value when the replicates agree and
  list the distinct values ("; ") where they differ (e.g. different SLURM nodes).
- ``machines``: how many machines (``machine``: CPU models, or GPU models) its processes ran
  on; the judge (statistics.py) makes no interval over processes of more than one.
"""
import numpy as np
import pandas as pd

from duel.cell import contract

POINT_IDENTITY = list(contract.pooled_by(contract.KEY))
NOISY_SPREAD = 1.10  # a point whose replicates differ by more than 10% is marked noisy
STATUS_SEVERITY = list(contract.FAILED) + ["skipped", "ok"]  # the first present wins
# How a point's processes pool each column: as the contract declares it (contract.POOLS).
LARGEST = contract.pooled_by(contract.LARGEST)
MEDIAN_OF = contract.pooled_by(contract.MEDIAN_OF)
SAMPLE_STATISTICS = contract.pooled_by(contract.SAMPLES)
DERIVED = contract.pooled_by(contract.DERIVED)
PER_ROW_LISTS = contract.pooled_by(contract.OWN_ROW)
ADDED = ["replicates", "replicate_samples", "replicate_figures", "replicate_spread",
         "replicate_cv", "noisy", "machines"]
# The columns that say which machine a row ran on (machine).
MACHINE_COLUMNS = ["device", "cpu_model", "device_name"]
# The device_name TensorFlow's adapter writes where its version cannot name the GPU: no model.
UNNAMED_GPU = "GPU 0"


def counted(frame):
    """The rows the statistics use: each point's last attempt in each process (duel/cell/
    attempts.py; a table from before attempts counts every row: summary.migrated)."""
    return frame[frame["counted"].astype(bool)]


def is_point_table(frame):
    return "replicates" in frame.columns


def _worst(group):
    """(status, message) of a point from its replicates' rows."""
    statuses = list(group["status"])
    for status in STATUS_SEVERITY:
        if status in statuses:
            break
    if status == "ok":
        return "ok", None
    first = group[group["status"] == status].iloc[0]
    messages = set(group.loc[group["status"] == status, "message"].dropna())
    message = first["message"]
    if len(group) > 1 and (len(messages) > 1 or statuses.count(status) < len(statuses)):
        message = "replicate %s: %s" % (first["replicate"], message)
    return status, message


def _plain(value):
    """A numpy scalar as the Python number it holds (an integer stays one)."""
    return value.item() if isinstance(value, np.generic) else value


def _known(value):
    return None if value is None or pd.isna(value) else value


def machine(row):
    """The machine a row's timing depends on: its CPU model on device cpu, else the
    accelerator's name, as recorded (missing where it was not). ``row``: a dict or a Series."""
    return row.get("cpu_model") if _known(row.get("device")) == "cpu" else row.get("device_name")


def _machines(group):
    """How many machines a point's rows ran on (an unrecorded one counts as one)."""
    present = [name for name in MACHINE_COLUMNS if name in group.columns]
    return len(set(_known(machine(row)) for row in group[present].to_dict("records")))


def _agreed(values):
    """One value when all agree; the distinct values joined with '; ' (text) where they differ."""
    present = [value for value in values if value is not None and not pd.isna(value)]
    distinct = list(dict.fromkeys(present))
    if len(distinct) <= 1:
        return distinct[0] if distinct else None
    if all(isinstance(value, str) for value in distinct):
        return "; ".join(distinct)
    return distinct[0]


def pooled(figures, counts, statistic):
    """A point's figure from its processes' figures (along the last axis) and sample counts:
    duel's median of the process medians (a slow process counts once, however many samples it
    took), timeit's mean of every sample (the process means weighted by their counts, as the
    2019 script pooled its repeats). The one pooling: the point table, the bootstrap and the
    geometric mean's interval read it."""
    figures = np.asarray(figures, dtype=np.float64)
    if statistic == "median":
        return np.median(figures, axis=-1)
    counts = np.broadcast_to(np.asarray(counts, dtype=np.float64), figures.shape)
    return np.sum(figures * counts, axis=-1) / np.sum(counts, axis=-1)


def _timing(ok, statistic):
    """The timing columns of a point from its ok replicates' rows (sorted by replicate).

    Each replicate's own stored figures are used as they are (timeit's mean is the 2019 script's
    sum / repeat / number), so a single replicate keeps every number of its row exactly.
    """
    if len(ok) == 1:
        row = ok.iloc[0]
        columns = dict((name, row[name]) for name in SAMPLE_STATISTICS)
        columns["samples"] = [float(value) for value in row["samples"]]
        columns["replicate_samples"] = [columns["samples"]]
        columns["replicate_figures"] = [float(row[statistic])]
        return columns
    per_replicate = [np.asarray(samples, dtype=np.float64) for samples in ok["samples"]]
    figures = [float(value) for value in ok[statistic]]
    counts = np.array([samples.size for samples in per_replicate], dtype=np.float64)
    every = np.concatenate(per_replicate)
    columns = {
        "replicate_samples": [[float(value) for value in samples] for samples in per_replicate],
        "replicate_figures": figures,
        "samples": [float(value) for value in every],
        "n_samples": int(every.size),
        "mean": float(pooled(ok["mean"].astype(float).values, counts, "mean")),
        "median": float(pooled(ok["median"].astype(float).values, counts, "median")),
        "std": float(np.std(every, ddof=1)) if every.size > 1 else 0.0,
        "min": float(every.min()),
        "max": float(every.max()),
        "p90": float(np.percentile(every, 90)),
    }
    if min(figures) > 0:
        columns["replicate_spread"] = max(figures) / min(figures)
        columns["replicate_cv"] = float(np.std(figures, ddof=1) / np.mean(figures))
        columns["noisy"] = bool(columns["replicate_spread"] > NOISY_SPREAD)
    return columns


def _point(group, columns):
    group = group.sort_values("replicate")
    record = dict((name, None if name in PER_ROW_LISTS else _agreed(group[name]))
                  for name in columns)
    record["replicates"] = int(len(group))
    record["machines"] = _machines(group)
    record.update(replicate_samples=None, replicate_figures=None, replicate_spread=None,
                  replicate_cv=None, noisy=None)
    status, message = _worst(group)
    record["status"], record["message"] = status, message
    for name in LARGEST:
        if name in group:
            values = group[name].dropna()
            record[name] = _plain(values.max()) if len(values) else None
    for name in MEDIAN_OF:
        if name in group:
            values = group[name].dropna()
            record[name] = float(values.median()) if len(values) else None
    if status == "ok":
        statistic = contract.reported_statistic(record["method"])
        record.update(_timing(group, statistic))
        flops = record.get("flops")
        if len(group) > 1:  # of the pooled figure (one replicate keeps its own)
            record["achieved_gflops"] = (flops / (record[statistic] / 1000.0) / 1e9
                                         if flops and record[statistic] else None)
    else:  # no pooled time for a point that failed in any process (the long sheet keeps all)
        for name in ("samples",) + SAMPLE_STATISTICS + DERIVED:
            if name in record:
                record[name] = None
    return record


def point_table(frame):
    """The merged (long) frame with the replicates of each point combined into one row.

    ``frame`` is a long table in today's columns (summary.migrated); one that is already a point
    table is returned as it is. The rows keep the order in which points first appear (the
    workflow's cell order).
    """
    if is_point_table(frame):
        return frame
    frame = counted(frame)
    keys = POINT_IDENTITY
    columns = [name for name in frame.columns if name not in ("replicate", "attempt", "counted")]
    records = [_point(group, columns)
               for _, group in frame.groupby(keys, sort=False, dropna=False)]
    table = pd.DataFrame.from_records(records, columns=columns + ADDED)
    for name in columns:  # keep the long frame's dtypes where the values allow it
        try:
            table[name] = table[name].astype(frame[name].dtype)
        except (TypeError, ValueError):
            pass
    return table
