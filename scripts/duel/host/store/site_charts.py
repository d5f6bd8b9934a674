"""The site's charts (duel publish): a model's trend over the runs, a scope's verdict per run.

matplotlib SVG files beside the pages (the project's one plotting library, already locked; text
stays text in the SVG), drawn with the run charts' style, colours and panels (render.plots).
"""
import os
import warnings

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib import dates as mdates  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from duel.host.render.plots import base  # noqa: E402
from duel.host.store import questions  # noqa: E402
from duel.host.tables import scopes  # noqa: E402

MARKED_RUNS = 60  # a line over more runs has no markers (they would hide it, and bloat the SVG)
# A run whose host was noisy, on a chart where runs are points: a cross over its point.
NOISY_MARKER = dict(linestyle="none", marker="x", color="black", markersize=6, zorder=3)


def scope_label(values):
    return " / ".join(str(value) for value in values)



def said_noisy(values):
    """Which of a column of stored noisy marks say noisy (unknown is not noisy here)."""
    return pd.Series(values).map(lambda value: questions.flag(value) is True).to_numpy()


def trend_figure(series, model, machine, scope):
    """One figure: an axes per batch x length point, a line per framework and mode over the
    runs' start times, the interval as a band; a run where the point failed breaks the line."""
    points = sorted(set(zip(series["batch_size"], series["seq_len"])))
    columns = min(3, len(points))
    figure, axes = base._panels(len(points), columns, 3.6, 2.4)
    keys = sorted(set(zip(series["framework"], series["mode"])),
                  key=lambda key: (key[0] != "pytorch", key))
    times = pd.to_datetime(series["started_at"], utc=True).dt.tz_localize(None)
    span = (times.min() - pd.Timedelta(hours=12), times.max() + pd.Timedelta(hours=12)) \
        if times.min() == times.max() else None  # one run: a day around it
    for axis, (batch, length) in zip(axes, points):
        at = series[(series["batch_size"] == batch) & (series["seq_len"] == length)]
        for framework, mode in keys:
            line = at[(at["framework"] == framework) & (at["mode"] == mode)]
            if line.empty:
                continue
            when = pd.to_datetime(line["started_at"], utc=True).dt.tz_localize(None)
            colour = base._colour(framework, mode)
            axis.plot(when, line["figure_ms"], color=colour, linewidth=1.0,
                      marker="o" if len(line) <= MARKED_RUNS else None, markersize=2.5)
            if line["low_ms"].notna().any():
                axis.fill_between(when, line["low_ms"], line["high_ms"], color=colour,
                                  alpha=0.2, linewidth=0)
            noisy = said_noisy(line["noisy"])
            if noisy.any():
                axis.plot(when[noisy], line["figure_ms"][noisy], **NOISY_MARKER)
        if span:
            axis.set_xlim(*span)
        locator = mdates.AutoDateLocator(maxticks=8)
        axis.xaxis.set_major_locator(locator)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axis.set_title("batch %d x length %d" % (batch, length))
        axis.set_ylabel("time per call (ms)")
        axis.set_xlabel("run start (UTC)")
    handles = [Line2D([], [], color=base._colour(*key), marker="o", markersize=3,
                      label=scopes.series_label(*key)) for key in keys]
    if said_noisy(series["noisy"]).any():
        handles.append(Line2D([], [], label="noisy run", **NOISY_MARKER))
    base._finish(figure, "%s on %s (%s): each run's figure and 95%% interval over its "
                  "processes" % (model, machine, scope_label(scope)), False, handles)
    return figure


def save(figure, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with plt.rc_context(base.STYLE), warnings.catch_warnings():
        # a span between the locator's steps: it says so, then picks a coarser step
        warnings.filterwarnings("ignore", "AutoDateLocator was unable")
        figure.savefig(path, metadata={"Date": None})
    plt.close(figure)


def verdict_figure(mine, by_run, scope):
    """The geometric-mean ratio of each judged run against its start: a line per pair of modes
    (colour) and machine (line style)."""
    figure, axis = plt.subplots(figsize=(9.0, 3.2), layout="constrained")
    frame = mine.assign(started=pd.to_datetime(mine["run_id"].map(by_run["started_at"]),
                                               utc=True).dt.tz_localize(None),
                        machine=mine["run_id"].map(by_run["machine"]))
    machines = sorted(frame["machine"].dropna().astype(str).unique())
    pairs = sorted(set(zip(frame["mode_pt"], frame["mode_tf"])))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (mode_pt, mode_tf) in enumerate(pairs):
        for slot, machine in enumerate(machines):
            line = frame[(frame["mode_pt"] == mode_pt) & (frame["mode_tf"] == mode_tf)
                         & (frame["machine"] == machine)].dropna(subset=["geomean_ratio"])
            if line.empty:
                continue
            line = line.sort_values("started")
            axis.plot(line["started"], line["geomean_ratio"].astype(float),
                      color=palette[index % len(palette)],
                      linestyle=base.LINESTYLES[slot % len(base.LINESTYLES)],
                      marker="o" if len(line) <= MARKED_RUNS else None, markersize=3,
                      label="PyTorch %s / TensorFlow %s%s" % (
                          mode_pt, mode_tf, ", %s" % machine if len(machines) > 1 else ""))
            noisy = said_noisy(line["run_id"].map(by_run["noisy"]))
            if noisy.any():
                axis.plot(line["started"][noisy], line["geomean_ratio"][noisy].astype(float),
                          **NOISY_MARKER)
    if said_noisy(frame["run_id"].map(by_run["noisy"])).any():
        axis.plot([], [], **dict(NOISY_MARKER, label="noisy run"))
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_yscale("log")
    axis.yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: "%g" % value))
    axis.yaxis.set_minor_formatter(plt.FuncFormatter(lambda value, _: "%g" % value))
    locator = mdates.AutoDateLocator(maxticks=8)
    axis.xaxis.set_major_locator(locator)
    axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    times = frame["started"].dropna()
    if len(times) and times.min() == times.max():
        axis.set_xlim(times.min() - pd.Timedelta(hours=12), times.max() + pd.Timedelta(hours=12))
    axis.set_ylabel("geometric-mean ratio\nPyTorch / TensorFlow (< 1: PyTorch faster)")
    axis.set_xlabel("run start (UTC)")
    axis.set_title("PyTorch / TensorFlow per judged run, %s" % scope_label(scope))
    axis.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return figure
