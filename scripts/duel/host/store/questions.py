"""The questions the store answers: which runs, one point over the runs, and where it stepped.

A point over runs is named ``MODEL/FRAMEWORK/MODE/BxL`` (e.g. ``bert-base-cased/pytorch/eager/
1x128``); era, device, precision, task, method and machine narrow it. A run's figure for a point
is its method's pooled figure over the run's processes (duel: the median of their medians;
timeit: the mean of their means), with Student's t interval over those processes; of a
generation point it may be its time to first token or per output token instead (FIGURES), and its
tokens per second and tokens that agreed ride along.

A trend is judged per point and machine over its runs in time order, the way asv finds steps
(a piecewise-constant fit of the runs' figures, split where the levels differ most), but a split
counts only when Welch's t over the runs on each side, at least MIN_RUNS of them, puts the
ratio of the two levels clearly beyond ``min_effect``, as every other comparison is judged: one
outlying run is never a step. A run whose host was noisy (its ``noisy`` mark, set when it was
stored by breakdown.disturbance, the rule the run's end applies) is left out of the fit: a
noisy run is never a step, nor a side of one.
"""
import re
from collections import namedtuple

import numpy as np
import pandas as pd

from duel.cell import contract, modes

from duel.host.store import archive
from duel.host.tables import scopes
from duel.host.verdicts import generation, statistics

POINT = re.compile(r"^(?P<model>[A-Za-z0-9][A-Za-z0-9._-]*)/(?P<framework>%s)/"
                   r"(?P<mode>[A-Za-z0-9_-]+)/(?P<batch_size>\d+)x(?P<seq_len>\d+)$"
                   % "|".join(modes.frameworks()))
POINT_SYNTAX = "MODEL/FRAMEWORK/MODE/BxL, e.g. bert-base-cased/pytorch/eager/1x128"
FILTERS = scopes.SCOPE + ["machine"]  # what a point's history can be narrowed to
SERIES = ["machine"] + scopes.SCOPE + ["model"] + scopes.COMPARED + ["batch_size", "seq_len"]
RUN_KEYS = SERIES + ["run_id", "started_at", "git_commit"]
MIN_RUNS = 2
# What a point's history follows: its method's time per call, or one of generation's times.
TIME = "time"
FIGURES = (TIME, "first_token_ms", "per_token_ms")
Point = namedtuple("Point", "model framework mode batch_size seq_len")


def parse_point(text):
    """A Point from its syntax; StoreError naming the syntax otherwise."""
    match = POINT.match(text or "")
    if not match:
        raise archive.StoreError("%r is not a point: write %s" % (text, POINT_SYNTAX))
    found = match.groupdict()
    return Point(found["model"], found["framework"], found["mode"], int(found["batch_size"]),
                 int(found["seq_len"]))


def point_label(row):
    return "%s/%s/%s/%dx%d" % (row["model"], row["framework"], row["mode"], row["batch_size"],
                               row["seq_len"])


RUN_COLUMNS = ["run_id", "started_at", "status", "machine", "eras", "devices", "git_commit",
               "points", "processes", "headline"]
# How disturbed a run's host was (breakdown.disturbance), as stored with it; null where it was
# not recorded: unknown, not quiet.
NOISE_COLUMNS = ["counted_points", "disturbed_points", "steal_share", "noisy", "sample_sd",
                 "between_sd", "noise_ratio"]


def flag(value):
    """A stored mark as True, False or None (unknown: not recorded)."""
    return None if value is None or pd.isna(value) else bool(value)


def noise_text(run):
    """A noisy run's mark in words ('noisy: 18 of 18 points disturbed, steal 9%'); '' for a run
    not marked noisy (quiet, or unknown). ``run``: a row of ``run_table``."""
    if not flag(run.get("noisy")):
        return ""
    text = "noisy: %d of %d points disturbed" % (run["disturbed_points"], run["counted_points"])
    if not pd.isna(run.get("steal_share")):
        text += ", steal %.0f%%" % (100.0 * run["steal_share"])
    return text


def status_text(run):
    """A run's status with its noisy mark: 'success, noisy: 18 of 18 points disturbed, ...'."""
    return ", ".join(part for part in (run["status"], noise_text(run))
                     if part and not pd.isna(part))


def run_table(store, machine=None, era=None):
    """A row per run, oldest first: when, where, what, how many points, the headline, how
    disturbed its host was (NOISE_COLUMNS)."""
    where, parameters = ["true"], []
    if machine:
        where.append("machine = ?")
        parameters.append(machine)
    if era:
        where.append("list_contains(string_split(eras, ','), ?)")
        parameters.append(era)
    table = archive.query(store, "SELECT * FROM runs WHERE %s ORDER BY started_at, run_id"
                          % " AND ".join(where), parameters, views=("runs",))
    return table[RUN_COLUMNS + NOISE_COLUMNS]


def noisy_runs(store):
    """{run id: its noisy mark (flag)} of every stored run."""
    table = archive.query(store, "SELECT run_id, noisy FROM runs", views=("runs",))
    return dict(zip(table["run_id"], map(flag, table["noisy"])))


def run_frame(store, run_id):
    """Every row of a stored run (as its merged summary would hold them); StoreError where the
    store has no such run."""
    archive.check_run_id(run_id)
    frame = archive.query(store, "SELECT * FROM points WHERE run_id = ?", [run_id],
                          views=("points",))
    if frame.empty:
        raise archive.StoreError("%s has no run %s (duel runs lists them)" % (store, run_id))
    return frame.drop(columns=list(archive.STORE_COLUMNS))


def _rows(store, points, filters, figure=TIME):
    """The counted rows of ``points`` (Points; all where empty) with their runs' when and where;
    only generation's where ``figure`` is one of its times."""
    where, parameters = ["counted"], []
    if figure != TIME:
        where.append("task = ?")
        parameters.append(generation.TASK)
    if points:
        alternatives = []
        for point in points:
            alternatives.append("(model = ? AND framework = ? AND mode = ? AND "
                                "batch_size = ? AND seq_len = ?)")
            parameters.extend(point)
        where.append("(%s)" % " OR ".join(alternatives))
    for name, value in sorted(filters.items()):
        if value:
            where.append("%s = ?" % name)
            parameters.append(value)
    sql = ("SELECT machine, era, device, precision, task, method, model, framework, mode, "
           "batch_size, seq_len, run_id, started_at, git_commit, replicate, status, median, "
           "mean, n_samples, first_token_ms, per_token_ms, tokens_per_s, tokens_agree FROM "
           "figures WHERE %s" % " AND ".join(where))
    return archive.query(store, sql, parameters, views=("figures",))


def _figures(rows, figure=TIME):
    """Per run and point: its figure pooled over its processes (the method's statistic; of one
    of generation's times, its median) and Student's t interval over them
    (statistics.log_t_intervals, all runs at once); tokens per second, their median, and the
    fewest tokens that agreed."""
    ok = rows[rows["status"] == "ok"].copy()
    if figure == TIME:
        ok["by_mean"] = ok["method"].map(contract.reported_statistic) == "mean"
        ok["figure"] = np.where(ok["by_mean"], ok["mean"], ok["median"]).astype(float)
    else:  # generation's times: their median over the processes, whatever the method
        ok["by_mean"] = False
        ok["figure"] = ok[figure].astype(float)
    ok["log"] = np.log(ok["figure"])
    per_process = ok.groupby(RUN_KEYS + ["replicate"], dropna=False, sort=False).agg(
        figure=("figure", "first"), log=("log", "first"), by_mean=("by_mean", "first"),
        tokens_per_s=("tokens_per_s", "first"), tokens_agree=("tokens_agree", "min"))
    runs = per_process.groupby(RUN_KEYS, dropna=False, sort=False).agg(
        median=("figure", "median"), mean=("figure", "mean"), processes=("figure", "size"),
        log_mean=("log", "mean"), log_std=("log", "std"), by_mean=("by_mean", "first"),
        tokens_per_s=("tokens_per_s", "median"),
        tokens_agree=("tokens_agree", "min")).reset_index()
    runs["figure_ms"] = np.where(runs["by_mean"].astype(bool), runs["mean"], runs["median"])
    runs["low_ms"], runs["high_ms"] = statistics.log_t_intervals(
        runs["log_mean"].to_numpy(), runs["log_std"].to_numpy(), runs["processes"].to_numpy())
    runs["status"] = "ok"
    return runs.drop(columns=["median", "mean", "log_mean", "log_std", "by_mean"])


def history(store, points, figure=TIME, **filters):
    """One row per point and run, in time order: the run's figure (``figure``, of FIGURES), its
    interval, where and what it ran in (filters: era, device, precision, task, method,
    machine), whether its host was noisy (noisy_runs), and a generation point's tokens per
    second and tokens that agreed. A run whose point failed in every process has its status
    and no figure."""
    if figure not in FIGURES:
        raise archive.StoreError("%r is not a figure of a point's history: %s"
                                 % (figure, ", ".join(FIGURES)))
    rows = _rows(store, points, filters, figure)
    columns = RUN_KEYS + ["status", "figure_ms", "low_ms", "high_ms", "processes",
                          "tokens_per_s", "tokens_agree", "noisy"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    figures = _figures(rows, figure)
    failed = rows.groupby(RUN_KEYS, dropna=False, sort=False)["status"].agg(
        lambda found: ", ".join(sorted(set(found.dropna())))).reset_index()
    failed = failed.merge(figures[RUN_KEYS], on=RUN_KEYS, how="left", indicator=True)
    failed = failed[failed["_merge"] == "left_only"].drop(columns="_merge")
    failed["processes"] = 0
    table = pd.concat([figures, failed], ignore_index=True) if len(failed) else figures
    noisy = noisy_runs(store)
    table["noisy"] = pd.Series([noisy.get(run_id) for run_id in table["run_id"]],
                               index=table.index, dtype=object)
    return table.sort_values(SERIES + ["started_at", "run_id"]).reset_index(drop=True)[columns]


Step = namedtuple("Step", "index start end ratio low high verdict")


def _best_split(logs, start, end):
    """The split of logs[start:end] (each side MIN_RUNS or more) where the two levels differ
    most against the noise around them: its index, or None."""
    best, where = 0.0, None
    for split in range(start + MIN_RUNS, end - MIN_RUNS + 1):
        left, right = logs[start:split], logs[split:end]
        spread = np.concatenate([left - left.mean(), right - right.mean()]).std() + 1e-12
        score = abs(right.mean() - left.mean()) / spread
        if score > best:
            best, where = score, split
    return where


def steps(logs, min_effect):
    """The clear steps of a series of runs' log figures, oldest first (binary segmentation:
    the best split, judged; then each side again)."""
    found = []

    def search(start, end):
        split = _best_split(logs, start, end)
        if split is None:
            return
        before, after = np.exp(logs[start:split]), np.exp(logs[split:end])
        ratio = float(np.exp(logs[split:end].mean() - logs[start:split].mean()))
        low, high = statistics.welch_ratio(after, before, ratio)
        clear, text = statistics.verdict(ratio, low, high, min_effect, "faster", "slower")
        if not clear:
            return
        found.append(Step(split, start, end, ratio, low, high, text))
        search(start, split)
        search(split, end)

    search(0, len(logs))
    return sorted(found)


TREND_COLUMNS = SERIES + ["runs", "noisy_runs", "first", "last", "step_run", "step_started_at",
                          "step_commit", "before_ms", "after_ms", "ratio", "low", "high",
                          "verdict"]


def trend(store, points=(), min_effect=statistics.MIN_EFFECT, figure=TIME, **filters):
    """Per point and machine, every clear step over its runs of ``figure`` (a row per step; a
    row with no step where none), from ``history``; ``noisy_runs`` of its ``runs`` were left
    out of the fit (marked noisy)."""
    table = history(store, points, figure, **filters)
    table = table[table["status"] == "ok"]
    rows = []
    for key, series in table.groupby(SERIES, sort=True):
        series = series.sort_values(["started_at", "run_id"])
        noisy = series["noisy"].map(lambda value: value is True)
        base = dict(zip(SERIES, key), runs=len(series), noisy_runs=int(noisy.sum()),
                    first=series["started_at"].iloc[0], last=series["started_at"].iloc[-1])
        series = series[~noisy].reset_index(drop=True)
        logs = np.log(series["figure_ms"].astype(float).to_numpy())
        found = steps(logs, min_effect)
        if not found:
            rows.append(base)
        for step in found:
            at = series.iloc[step.index]
            before = series["figure_ms"].iloc[step.start:step.index]
            after = series["figure_ms"].iloc[step.index:step.end]
            rows.append(dict(base, step_run=at["run_id"], step_started_at=at["started_at"],
                             step_commit=at["git_commit"], before_ms=float(before.median()),
                             after_ms=float(after.median()), ratio=step.ratio, low=step.low,
                             high=step.high, verdict=step.verdict))
    return pd.DataFrame(rows, columns=TREND_COLUMNS)
