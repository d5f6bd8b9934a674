"""Charts of a run, drawn from the merged table alone (matplotlib, each as PNG and SVG).

Every chart says in its title what it shows and where it was measured (era and versions,
device, precision, task, method, hardware and threads), puts units on its axes, and marks a
point that has no value where the value would be (N/A: skipped; OOM; error), so nothing is
silently missing. One folder per kind, one figure per scope (era x device x precision x task x
method), a panel per model:

- ``ratio``: at a glance, PyTorch / TensorFlow time per model and point, coloured by who is
  faster, bold where that is clear, with '=' where the two are equivalent and '?' where it is
  undecided (statistics.py's decisions);
- ``frameworks``: the 2019 article's charts, time per call of every framework and mode side by
  side, grouped by batch size and length, with the interval of each figure as an error bar;
- ``length``: time per call against sequence length, a line per framework, mode and batch size;
- ``modes``: speed-up of each graph mode over its framework's eager mode;
- ``eras``: the eras side by side (oldest first) on the same cell and point;
- ``timeline``: each framework-mode's figure per point against the eras' dates;
- ``memory``: peak memory of each point against sequence length;
- ``gflops``: achieved GFLOP/s against sequence length;
- ``deployment``: each framework's C/C++ runner beside the Python runs of the same graph (the
  same artifact loaded in Python, and the graph mode it was exported from), both frameworks
  side by side;
- ``generation``: task generation's PyTorch / TensorFlow time to first token and per output
  token per model and point, a marker per pair of modes, with its interval, on a log scale.

A kind that this run cannot show (no graph mode, one era only) gets one figure that says why.
"""
import os
import textwrap
from collections import namedtuple

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib import ticker, transforms  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from duel.cell import contract, modes  # noqa: E402
from duel.host.stacks import eras  # noqa: E402
from duel.host.tables import scopes, summary  # noqa: E402
from duel.host.verdicts import generation, pairs, statistics, timeline  # noqa: E402

FORMATS = ("png", "svg")
STYLE = {
    "svg.fonttype": "none",  # text stays text in the SVG: searchable and editable
    "svg.hashsalt": "duel",  # the same table draws the same SVG
    "font.size": 8,
    "axes.titlesize": 9,
    "figure.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.dpi": 110,
}
COLOURS = {
    ("pytorch", "eager"): "#1f77b4",
    ("pytorch", "torchscript"): "#17becf",
    ("pytorch", "compile"): "#9467bd",
    ("tensorflow", "eager"): "#ff7f0e",
    ("tensorflow", "function"): "#d62728",
    ("tensorflow", "xla"): "#8c564b",
    ("pytorch", "jitpy"): "#aec7e8",
    ("pytorch", "jitcpp"): "#08306b",
    ("tensorflow", "savedpy"): "#ffbb78",
    ("tensorflow", "savedcpp"): "#7f2704",
}
# The deployment chart: each C/C++ mode beside the Python runs of the same graph (the graph
# mode first, then the artifact loaded in Python, then the C/C++ runner).
DEPLOYMENT_MODES = {mode.framework: tuple(reversed(modes.same_graph_in_python(mode)))
                    + (mode.name,)
                    for mode in modes.MODES if mode.kind == modes.DEPLOYED_CPP}
def era_colour(era):
    """An era's colour: the registry's eras (envs/eras.yaml) from grey (oldest) to green
    (newest), so a new era falls in its place; one not in the registry is black."""
    order = list(eras.registry())
    if era not in order:
        return "#000000"
    if len(order) == 1:
        return "#2ca02c"
    grey, green = np.array([0x7f, 0x7f, 0x7f]), np.array([0x2c, 0xa0, 0x2c])
    share = order.index(era) / float(len(order) - 1)
    return "#%02x%02x%02x" % tuple(int(round(value)) for value in grey + share * (green - grey))



MARKERS = ("o", "s", "^", "D", "v", "P")
LINESTYLES = ("-", "--", ":", "-.")
GAP_NOTE = ("Marked where the value would be: N/A = skipped (longer than the model's maximum, or "
            "the mode cannot run it); OOM = out of memory; error = failed (the spreadsheet's "
            "'long' sheet holds the message).")

Series = namedtuple("Series", "label colour rows linestyle marker")


def _colour(framework, mode):
    return COLOURS.get((framework, mode), "#333333")


def _models(group):
    return list(dict.fromkeys(group["model"]))


def _series_keys(group):
    """(framework, mode) pairs in order: PyTorch first, then TensorFlow, modes as they ran."""
    keys = list(dict.fromkeys(zip(group["framework"], group["mode"])))
    return sorted(keys, key=lambda key: key[0] != "pytorch")


def _panels(count, columns, width, height, aside=2.0):
    """A figure with ``count`` panels in a grid (``aside`` inches kept for a legend or a colour
    bar on the right); unused cells hidden."""
    columns = max(1, min(columns, count))
    rows = (count + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns,
                                figsize=(width * columns + aside, height * rows + 1.2),
                                squeeze=False, layout="constrained")
    flat = list(axes.flat)
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def _wrapped(text, figure, points=7.0, margin=0.0):
    """``text`` broken into lines that fit the figure's width less ``margin`` inches on each
    side, at ``points`` size."""
    width = int(max(4.0, figure.get_figwidth() - 2 * margin) * 115 / points)
    return "\n".join("\n".join(textwrap.wrap(line, width)) for line in text.split("\n"))


def _title(figure, text, margin=2.2):
    """A centred title that keeps clear of a legend on the right (``margin`` inches)."""
    figure.suptitle(_wrapped(text, figure, STYLE["figure.titlesize"], margin=margin))


def _plain_log_axis(axis):
    """A log y axis labelled 20, 50, 100 rather than 2x10^1 (times are read, not exponents)."""
    axis.set_yscale("log")
    axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: "%g" % value))
    axis.yaxis.set_minor_formatter(ticker.NullFormatter())


def _finish(figure, title, gaps, legend_handles=None):
    """Title on top, the legend on the right, and what a gap mark means at the bottom if any."""
    _title(figure, title)
    if legend_handles:
        figure.legend(handles=legend_handles, loc="outside right upper", frameon=False)
    if gaps:
        figure.supxlabel(_wrapped(GAP_NOTE, figure), fontsize=7, x=0.01, ha="left")


def _save(figure, folder, stem):
    """The figure as PNG and SVG; the layout computed for the first is kept for the second."""
    paths = []
    for extension in FORMATS:
        path = os.path.join(folder, "%s.%s" % (stem, extension))
        figure.savefig(path, metadata={"Date": None} if extension == "svg" else None)
        figure.set_layout_engine("none")
        paths.append(path)
    plt.close(figure)
    return paths


def _placeholder(folder, stem, title, text):
    figure = plt.figure(figsize=(8, 2.5))
    _title(figure, title)
    figure.text(0.5, 0.5, _wrapped(text, figure, 9.0), ha="center", va="center")
    return _save(figure, folder, stem)


def _mark_gap(axis, x, label, colour, slot=0, vertical=False):
    """A visible mark for a point without a value: its status, where the value would be."""
    blend = transforms.blended_transform_factory(axis.transData, axis.transAxes)
    if vertical:
        axis.text(x, 0.02, label, transform=blend, rotation=90, ha="center", va="bottom",
                  fontsize=6.5, color=colour, fontweight="bold")
    else:
        height = 0.04 + 0.07 * slot
        axis.plot([x], [height], marker="x", color=colour, transform=blend, clip_on=False,
                  linestyle="none")
        axis.text(x, height + 0.015, label, transform=blend, ha="center", va="bottom",
                  fontsize=6, color=colour)


def _status(row):
    return row["status"] if row is not None else None


def _value(row, column):
    if row is None or row["status"] != "ok":
        return None
    value = row[column]
    return None if value is None or value != value else float(value)


def _interval(row):
    """(low, high) bootstrap interval of a point's reported figure (hierarchical over its
    replicates, statistics.py), or None."""
    if row is None or row["status"] != "ok" or not row["n_samples"] \
            or row["n_samples"] < statistics.MIN_SAMPLES:
        return None
    return statistics.bootstrap_interval(row["replicate_samples"],
                                         contract.reported_statistic(row["method"]))


def _bar_positions(points):
    """x of each 'BxL' point: consecutive within a batch size, a gap between batch sizes."""
    positions, x, previous = [], 0.0, None
    for point in points:
        batch = point.split("x")[0]
        if previous is not None and batch != previous:
            x += 0.6
        positions.append(x)
        previous = batch
        x += 1.0
    return positions


def _bar_figure(group, series, points, title, ylabel, column="reported_ms", log_y=True,
                threshold=None):
    """A panel per model; a bar per series at each point, grouped by batch size then length.

    ``column`` reported_ms: bars with the figure's interval as error bars, on a log axis;
    another column: plain bars, with a dashed line at ``threshold`` if given.
    """
    models = _models(group)
    positions = _bar_positions(points)
    width = 0.8 / max(1, len(series))
    figure, axes = _panels(len(models), 1, max(7.0, 0.28 * len(points) * len(series) + 2.5), 2.8)
    gaps = False
    for axis, model in zip(axes, models):
        plotted = False
        for index, entry in enumerate(series):
            rows = entry.rows[entry.rows["model"] == model]
            by_point = {point: row for point, (_, row) in zip(rows["point"], rows.iterrows())}
            for x, point in zip(positions, points):
                row = by_point.get(point)
                xs = x + (index - (len(series) - 1) / 2.0) * width
                value = _value(row, column)
                if value is None:
                    if row is not None:  # a point this series was asked to run
                        _mark_gap(axis, xs, scopes.status_label(_status(row)), entry.colour,
                                  vertical=True)
                        gaps = True
                    continue
                interval = _interval(row) if column == "reported_ms" else None
                error = None
                if interval:
                    error = [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]]
                axis.bar(xs, value, width=width, color=entry.colour, yerr=error,
                         error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "black"})
                plotted = True
        if plotted and log_y:
            _plain_log_axis(axis)
        if threshold is not None:
            axis.axhline(threshold, color="black", linewidth=0.8, linestyle="--")
        axis.set_xticks(positions)
        axis.set_xticklabels(points, rotation=90 if len(points) > 8 else 0)
        axis.set_xlim(positions[0] - 0.6, positions[-1] + 0.6)  # gap marks at the ends too
        axis.set_xlabel("batch size x sequence length (tokens)")
        axis.set_ylabel(ylabel)
        axis.set_title(model)
    handles = [Patch(color=entry.colour, label=entry.label) for entry in series]
    _finish(figure, title, gaps, handles)
    return figure


def _line_figure(group, series, column, title, ylabel, log_y=False, reference=None):
    """A panel per model; value of ``column`` against sequence length, a line per series."""
    models = _models(group)
    lengths = sorted(set(group["seq_len"]))
    figure, axes = _panels(len(models), 3, 4.6, 3.2)
    gaps = False
    for axis, model in zip(axes, models):
        slot = 0
        plotted = False
        for entry in series:
            rows = entry.rows[entry.rows["model"] == model].sort_values("seq_len")
            if rows.empty:
                continue
            xs, ys = [], []
            marked = False
            for _, row in rows.iterrows():
                value = _value(row, column)
                if value is None:
                    _mark_gap(axis, row["seq_len"], scopes.status_label(row["status"]),
                              entry.colour, slot)
                    marked = gaps = True
                else:
                    xs.append(row["seq_len"])
                    ys.append(value)
            slot += 1 if marked else 0
            if xs:
                axis.plot(xs, ys, color=entry.colour, linestyle=entry.linestyle,
                          marker=entry.marker, markersize=3.5, label=entry.label)
                plotted = True
        axis.set_xscale("log", base=2)
        axis.set_xticks(lengths)
        axis.set_xticklabels([str(length) for length in lengths])
        axis.set_xlim(min(lengths) / 1.4, max(lengths) * 1.4)
        if log_y and plotted:
            _plain_log_axis(axis)
        if reference is not None:
            axis.axhline(reference, color="black", linewidth=0.8)
        axis.set_xlabel("sequence length (tokens)")
        axis.set_ylabel(ylabel)
        axis.set_title(model)
    handles = [Line2D([], [], color=entry.colour, linestyle=entry.linestyle,
                                       marker=entry.marker, markersize=3.5, label=entry.label)
               for entry in series]
    _finish(figure, title, gaps, handles)
    return figure


def _line_series(group, keys, label=None):
    """A series per (framework, mode) and batch size: colour by mode, line style by batch."""
    batches = sorted(set(group["batch_size"]))
    series = []
    for framework, mode in keys:
        rows = group[(group["framework"] == framework) & (group["mode"] == mode)]
        for index, batch in enumerate(batches):
            series.append(Series(
                "%s, batch %d" % ((label or scopes.series_label)(framework, mode), batch),
                _colour(framework, mode), rows[rows["batch_size"] == batch],
                LINESTYLES[index % len(LINESTYLES)], MARKERS[index % len(MARKERS)]))
    return series


def _by_scope(frame):
    for values, group in frame.groupby(scopes.SCOPE, sort=False):
        yield values, group


def frameworks_charts(frame):
    """The 2019 charts: time per call of every framework and mode, per model and point."""
    for values, group in _by_scope(frame):
        points = summary.point_order(group)
        series = [Series(scopes.series_label(framework, mode), _colour(framework, mode),
                         group[(group["framework"] == framework) & (group["mode"] == mode)],
                         None, None)
                  for framework, mode in _series_keys(group)]
        title = ("PyTorch vs TensorFlow: time per call (error bars: %d%% bootstrap interval, %s)"
                 "\n%s" % (round(statistics.CONFIDENCE * 100), scopes.interval_label(group),
                           scopes.describe(group, values)))
        ylabel = "%s time per call (ms, log)" % contract.reported_statistic(values[-1])
        yield scopes.file_stem(values), _bar_figure(group, series, points, title, ylabel)


def length_charts(frame):
    for values, group in _by_scope(frame):
        title = "Time per call against sequence length\n%s" % scopes.describe(group, values)
        ylabel = "%s time per call (ms, log)" % contract.reported_statistic(values[-1])
        yield scopes.file_stem(values), _line_figure(
            group, _line_series(group, _series_keys(group)), "reported_ms", title, ylabel,
            log_y=True)


def modes_charts(frame):
    for values, group in _by_scope(frame):
        rows = pairs.mode_speedups(group)
        if rows.empty:
            continue
        title = ("Speed-up of each graph mode over its framework's eager mode (same point)\n%s"
                 % scopes.describe(group, values))
        series = _line_series(rows, _series_keys(rows),
                              label=lambda framework, mode: "%s / eager" % scopes.series_label(
                                  framework, mode))
        yield scopes.file_stem(values), _line_figure(
            rows, series, "ratio", title, "speed-up over eager (x; > 1: faster)",
            reference=1.0)


def eras_charts(frame):
    """The eras side by side, oldest first: a figure per cell kind (device, precision, task,
    method, framework, mode) that ran in several eras, with the models that ran in all of them."""
    keys = scopes.SCOPE[1:] + scopes.COMPARED
    for values, group in frame.groupby(keys, sort=False):
        names = eras.in_time_order(group["era"].unique())
        if len(names) < 2:
            continue
        models_of = [set(rows["model"]) for _, rows in group.groupby("era")]
        in_all = set.intersection(*models_of)
        group = group[group["model"].isin(in_all)]
        if group.empty:
            continue
        series = []
        for era in names:
            rows = group[group["era"] == era]
            series.append(Series("era %s (%s)" % (era, scopes.versions(rows)),
                                 era_colour(era), rows, None, None))
        hardware = sorted(set(summary.hardware(rows) for _, rows in group.groupby("era")))
        title = ("Eras %s: %s, %s %s %s, method %s (%s per call) | %s" % (
            ", ".join(names), scopes.series_label(values[4], values[5]), values[0], values[1],
            values[2], values[3], contract.reported_statistic(values[3]), "; ".join(hardware)))
        ylabel = "%s time per call (ms, log)" % contract.reported_statistic(values[3])
        points = summary.point_order(group)
        yield scopes.file_stem(values), _bar_figure(group, series, points, title, ylabel)


def timeline_charts(frame):
    """Each framework-mode's figure per point against the eras' dates, with its interval over
    the processes: a figure per model and scope (device, precision, task, method) that ran in
    several eras, an axes per point."""
    table = timeline.medians(frame)
    table = table[(table["status"] == "ok") & table["era_date"].notna()]
    for values, group in table.groupby(["device", "precision", "task", "method", "model"],
                                       sort=False):
        if group["era"].nunique() < 2:
            continue
        points = summary.point_order(group)
        columns = min(3, len(points))
        rows = (len(points) + columns - 1) // columns
        figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns + 2.4, 3.2 * rows + 1.2),
                                    squeeze=False, sharex=True)
        dates = sorted(set(group["era_date"]))
        when = dict((date, np.datetime64(date)) for date in dates)
        for axis, point in zip(axes.flat, points):
            rows_of_point = group[group["point"] == point]
            for (framework, mode), line in rows_of_point.groupby(["framework", "mode"]):
                line = line.sort_values("era_date")
                x = [when[date] for date in line["era_date"]]
                y = line["figure_ms"].astype(float).to_numpy()
                low = line["low_ms"].astype(float).to_numpy()
                high = line["high_ms"].astype(float).to_numpy()
                error = np.vstack([np.where(np.isnan(low), 0, y - low),
                                   np.where(np.isnan(high), 0, high - y)])
                axis.errorbar(x, y, yerr=error, color=_colour(framework, mode), marker="o",
                              capsize=3, label=scopes.series_label(framework, mode))
            _plain_log_axis(axis)
            # a timeline spans less than a decade: more labelled steps than 1, 2, 5
            axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
            axis.set_title(point, fontsize=9)
            axis.set_xticks([when[date] for date in dates])
            axis.set_xticklabels([date[:4] for date in dates])
            axis.tick_params(labelbottom=True)
            if axis in axes[:, 0]:
                axis.set_ylabel("%s time per call (ms, log)"
                                % contract.reported_statistic(values[3]))
        for axis in list(axes.flat)[len(points):]:
            axis.set_visible(False)
        names = eras.in_time_order(group["era"].unique())
        handles, labels = axes.flat[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="center right", fontsize=8)
        figure.supxlabel("era release date: %s" % ", ".join(
            "%s %s" % (name, eras.registry()[name].date) if name in eras.registry() else name
            for name in names), fontsize=8)
        _title(figure, "%s over the eras: %s %s %s, method %s; bars: 95%% interval over the "
               "processes" % (values[4], values[0], values[1], values[2], values[3]))
        figure.tight_layout(rect=(0, 0, 0.82, 0.93))
        yield scopes.file_stem(values[:4] + (values[4],)), figure


def memory_charts(frame):
    for values, group in _by_scope(frame):
        device = values[1] != "cpu" and group["peak_device_mb"].notna().any()
        column = "peak_device_mb" if device else "peak_host_rss_mb"
        what = "peak device memory" if device else "peak host memory (resident set size)"
        title = "%s of each point, weights and input included\n%s" % (
            what[0].upper() + what[1:], scopes.describe(group, values))
        yield scopes.file_stem(values), _line_figure(
            group, _line_series(group, _series_keys(group)), column, title, "%s (MiB)" % what)


def gflops_charts(frame):
    for values, group in _by_scope(frame):
        title = ("Achieved GFLOP/s: analytic forward FLOPs / %s time per call\n%s"
                 % (contract.reported_statistic(values[-1]), scopes.describe(group, values)))
        yield scopes.file_stem(values), _line_figure(
            group, _line_series(group, _series_keys(group)), "achieved_gflops", title,
            "achieved GFLOP/s")


def noise_charts(frame):
    """Where the machine was unstable: each point's spread between its processes."""
    for values, group in _by_scope(frame):
        if group["replicates"].max() < 2:
            continue
        group = group.copy()
        group["spread_percent"] = [None if spread is None or spread != spread
                                   else 100.0 * (float(spread) - 1.0)
                                   for spread in group["replicate_spread"]]
        points = summary.point_order(group)
        series = [Series(scopes.series_label(framework, mode), _colour(framework, mode),
                         group[(group["framework"] == framework) & (group["mode"] == mode)],
                         None, None)
                  for framework, mode in _series_keys(group)]
        title = ("Spread between processes: slowest / fastest replicate's %s, minus 1 (%%); "
                 "dashed: %d%%, above it a point is marked noisy\n%s" % (
                     contract.reported_statistic(values[-1]),
                     round(100 * (statistics.NOISY_SPREAD - 1)),
                     scopes.describe(group, values)))
        yield scopes.file_stem(values), _bar_figure(
            group, series, points, title, "spread between replicates (%)",
            column="spread_percent", log_y=False,
            threshold=100 * (statistics.NOISY_SPREAD - 1))


def deployment_charts(frame):
    """Time per call of the deployment modes and their Python counterparts, per model and
    point: what Python costs (a framework's bars), PyTorch vs TensorFlow deployed (the darkest
    bar of each)."""
    for values, group in _by_scope(frame):
        keep = [mode in DEPLOYMENT_MODES.get(framework, ())
                for framework, mode in zip(group["framework"], group["mode"])]
        group = group[keep]
        if not group["mode"].isin(modes.mode_names(kinds=(modes.DEPLOYED_CPP,))).any():
            continue
        order = [(framework, mode) for framework, names in DEPLOYMENT_MODES.items()
                 for mode in names]
        present = set(zip(group["framework"], group["mode"]))
        series = [Series(scopes.series_label(framework, mode), _colour(framework, mode),
                         group[(group["framework"] == framework) & (group["mode"] == mode)],
                         None, None)
                  for framework, mode in order if (framework, mode) in present]
        title = ("Deployed: the same graph in Python and in C/C++ (jitcpp: libtorch; savedcpp: "
                 "TensorFlow C API), error bars: %d%% bootstrap interval, %s\n%s"
                 % (round(statistics.CONFIDENCE * 100), scopes.interval_label(group),
                    scopes.describe(group, values)))
        ylabel = "%s time per call (ms, log)" % contract.reported_statistic(values[-1])
        yield scopes.file_stem(values), _bar_figure(group, series, summary.point_order(group),
                                                    title, ylabel)


def _heat_colour_limit(ratios):
    """The colour scale's reach in log2: the largest ratio seen, but at least 2x either way, so
    a 10% difference never looks as strong as a two-fold one."""
    values = [abs(np.log2(value)) for value in ratios if value and value > 0]
    return max([1.0] + values)


def ratio_charts(frame, ratios):
    """At a glance: a heat map per pair of modes, rows models, columns points."""
    if ratios.empty:
        return
    ratios = ratios.copy()
    ratios["precision"] = ratios["precision"].fillna(summary.MIGRATED_DEFAULTS["precision"])
    for values, group in _by_scope(frame):
        selected = ratios
        for name, value in zip(scopes.SCOPE, values):
            selected = selected[selected[name] == value]
        if selected.empty:
            continue
        mode_pairs = list(dict.fromkeys(zip(selected["mode_pt"], selected["mode_tf"])))
        models = list(dict.fromkeys(selected["model"]))
        points = summary.point_order(selected)
        limit = _heat_colour_limit(selected["ratio"].dropna())
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
        figure, axes = _panels(len(mode_pairs), 1, max(6.0, 0.62 * len(points) + 3.0),
                               0.42 * len(models) + 1.6)
        gaps = False
        image = None
        for axis, (mode_pt, mode_tf) in zip(axes, mode_pairs):
            block = selected[(selected["mode_pt"] == mode_pt) & (selected["mode_tf"] == mode_tf)]
            grid = np.full((len(models), len(points)), np.nan)
            for (_, row), decision in zip(block.iterrows(), statistics.decisions(block)):
                i, j = models.index(row["model"]), points.index(row["point"])
                ratio = row["ratio"]
                if ratio is not None and ratio == ratio:
                    grid[i, j] = np.log2(float(ratio))
                    axis.text(j, i, "%.2f%s" % (ratio, DECISION_MARKS.get(decision, "?")),
                              ha="center", va="center", fontsize=6.5,
                              fontweight="bold" if decision == statistics.FASTER else "normal")
                else:
                    gaps = True
                    label = str(row["verdict"]).replace("not compared: ", "")
                    axis.text(j, i, label.replace(", ", "\n"), ha="center", va="center",
                              fontsize=5.5, color="#444444")
            axis.set_facecolor("#dddddd")
            image = axis.imshow(np.ma.masked_invalid(grid), cmap="coolwarm", norm=norm,
                                aspect="auto")
            axis.set_xticks(range(len(points)))
            axis.set_xticklabels(points, rotation=90 if len(points) > 8 else 0)
            axis.set_yticks(range(len(models)))
            axis.set_yticklabels(models)
            axis.grid(False)
            axis.set_xlabel("batch size x sequence length (tokens)")
            axis.set_title("PyTorch %s / TensorFlow %s" % (mode_pt, mode_tf))
        colourbar = figure.colorbar(image, ax=axes, shrink=0.9, pad=0.02)
        ticks = [tick for tick in (0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0)
                 if abs(np.log2(tick)) <= limit]
        colourbar.set_ticks([np.log2(tick) for tick in ticks])
        colourbar.set_ticklabels(["%g" % tick for tick in ticks])
        colourbar.set_label("PyTorch time / TensorFlow time\n(blue < 1: PyTorch faster)")
        title = ("Which framework is faster? PyTorch / TensorFlow time per point (ratio of %ss)\n"
                 "bold: faster, clearly (the whole %d%% interval, %s, lies beyond %s); "
                 "'=': equivalent (it lies within); '?': undecided\n%s" % (
                     contract.reported_statistic(values[-1]), round(statistics.CONFIDENCE * 100),
                     scopes.interval_label(group), _effect_label(selected),
                     scopes.describe(group, values)))
        _title(figure, title, margin=0.3)
        if gaps:
            figure.supxlabel(_wrapped(GAP_NOTE, figure), fontsize=7, x=0.01, ha="left")
        yield scopes.file_stem(values), figure


# What follows a ratio in the heat map, by its decision ('?' also where there is none).
DECISION_MARKS = {statistics.FASTER: "", statistics.EQUIVALENT: "="}


def _effect_label(ratios):
    effect = float(ratios["min_effect"].dropna().iloc[0]) if "min_effect" in ratios and \
        ratios["min_effect"].notna().any() else statistics.MIN_EFFECT
    return "%g%% either way" % (100 * effect)


def generation_figure(ratios, where):
    """Task generation's ratios (generation.point_ratios, one scope): a panel per figure (time
    to first token, per output token), PyTorch / TensorFlow per model and point on a log
    scale, a marker per pair of modes with its 95% interval, filled where the judge finds one
    framework clearly faster; the band of the minimum effect shaded; a point without a ratio
    marked with the status of each side not ok. ``where``: the scope's line (scopes.describe)."""
    points = list(dict.fromkeys(zip(ratios["model"], ratios["batch_size"], ratios["seq_len"])))
    labels = ["%s %dx%d" % point for point in points]
    mode_pairs = list(dict.fromkeys(zip(ratios["mode_pt"], ratios["mode_tf"])))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    figure, axes = _panels(len(generation.FIGURES), 2, max(4.0, 0.5 * len(points) + 2.0), 3.2)
    found = ratios["ratio"].dropna().astype(float)
    reach = list(found) + list(ratios["ci_low"].dropna()) + list(ratios["ci_high"].dropna())
    top = max([1.0 + 2 * statistics.MIN_EFFECT] + reach) * 1.3
    bottom = min([1.0 / (1.0 + 2 * statistics.MIN_EFFECT)] + reach) / 1.3
    gaps = False
    for axis, (name, words) in zip(axes, generation.FIGURES):
        axis.axhspan(1.0 / (1.0 + statistics.MIN_EFFECT), 1.0 + statistics.MIN_EFFECT,
                     color="#dddddd", alpha=0.6, zorder=0)
        axis.axhline(1.0, color="black", linewidth=0.8)
        for slot, (mode_pt, mode_tf) in enumerate(mode_pairs):
            colour = palette[slot % len(palette)]
            offset = (slot - (len(mode_pairs) - 1) / 2.0) * 0.8 / max(1, len(mode_pairs))
            rows = ratios[(ratios["figure"] == name) & (ratios["mode_pt"] == mode_pt)
                          & (ratios["mode_tf"] == mode_tf)]
            for _, row in rows.iterrows():
                x = points.index((row["model"], row["batch_size"], row["seq_len"])) + offset
                ratio = row["ratio"]
                if ratio is None or pd.isna(ratio):
                    label = "\n".join(
                        "%s %s" % (framework, scopes.status_label(status)) for framework, status
                        in (("PyTorch", row["status_pt"]), ("TensorFlow", row["status_tf"]))
                        if status != "ok")
                    _mark_gap(axis, x, label, colour, vertical=True)
                    gaps = True
                    continue
                error = None
                if row["ci_low"] is not None and not pd.isna(row["ci_low"]):
                    error = [[ratio - row["ci_low"]], [row["ci_high"] - ratio]]
                axis.errorbar([x], [ratio], yerr=error, fmt="o", color=colour, capsize=3,
                              fillstyle="full" if row["decision"] == statistics.FASTER
                              else "none")
        _plain_log_axis(axis)
        axis.set_ylim(bottom, top)
        axis.set_xticks(range(len(points)))
        axis.set_xticklabels(labels, rotation=90 if len(points) > 6 else 0)
        axis.set_xlim(-0.7, len(points) - 0.3)
        axis.set_xlabel("model, batch size x prompt length (tokens)")
        axis.set_ylabel("PyTorch / TensorFlow %s\n(< 1: PyTorch faster, log)" % words)
        axis.set_title(words[0].upper() + words[1:])
    handles = [Line2D([], [], marker="o", linestyle="none", color=palette[slot % len(palette)],
                      label="PyTorch %s / TensorFlow %s" % pair)
               for slot, pair in enumerate(mode_pairs)]
    _finish(figure, "Text generation: PyTorch / TensorFlow time to first token and per output "
                    "token per point; %d%% interval, filled where one framework is clearly "
                    "faster (the whole interval beyond %g%%, shaded)\n%s"
            % (round(statistics.CONFIDENCE * 100), 100 * statistics.MIN_EFFECT, where),
            gaps, handles)
    return figure


def generation_charts(frame):
    """Task generation's ratios per scope (generation_figure); ``frame``: the merged table, its
    processes apart (generation.point_ratios judges over them)."""
    ratios = generation.point_ratios(frame)
    if ratios.empty:
        return
    prepared = scopes.prepared(frame)
    for values, group in _by_scope(prepared):
        selected = ratios[np.logical_and.reduce(
            [ratios[name] == value for name, value in zip(scopes.SCOPE, values)])]
        if len(selected):
            yield scopes.file_stem(values), generation_figure(selected,
                                                              scopes.describe(group, values))


EMPTY = {
    "noise": ("One process per cell", "This run has one replicate per cell (config key "
              "replicates: 1): there is no spread between processes to show, and its intervals "
              "see only the jitter inside one process."),
    "ratio": ("No PyTorch / TensorFlow pair", "This run has no point that both PyTorch and "
              "TensorFlow ran in the same scope: nothing to compare."),
    "modes": ("No graph mode", "This run has no framework with both its eager mode and a graph "
              "mode (torchscript, compile, function, xla): no speed-up to show."),
    "deployment": ("No deployment mode", "This run has no C/C++ deployment mode (jitcpp, "
                   "savedcpp): add them to config key 'modes', beside jitpy / savedpy or "
                   "torchscript / function, to see what Python costs."),
    "eras": ("One era only", "This run has no cell in two eras: add e.g. "
             "'eras: [hf2019, current]' to compare the 2019 stack with today's."),
    "timeline": ("One era only", "This run has no cell in two eras: the timeline needs "
                 "several (config/timeline.yaml runs four)."),
    "generation": ("No text generation", "This run has no point of task generation that both "
                   "PyTorch and TensorFlow ran: add 'generation' to config key 'tasks' "
                   "(config/generation.yaml runs GPT-2 and DistilGPT-2)."),
}


def charts(kind, frame, ratios, merged=None):
    """(file stem, figure) pairs of one kind (``merged``: the merged table, which generation's
    charts read, its processes apart; ``frame``: its point table)."""
    if kind == "ratio":
        return ratio_charts(frame, ratios)
    if kind == "generation":
        return generation_charts(frame if merged is None else merged)
    return {
        "frameworks": frameworks_charts,
        "length": length_charts,
        "modes": modes_charts,
        "eras": eras_charts,
        "timeline": timeline_charts,
        "memory": memory_charts,
        "gflops": gflops_charts,
        "noise": noise_charts,
        "deployment": deployment_charts,
    }[kind](frame)


def draw_all(frame, ratios, folders):
    """Draw every kind into its folder (``folders``: kind -> folder); returns kind -> paths."""
    merged, frame = frame, scopes.prepared(frame)
    written = {}
    with plt.rc_context(STYLE):
        for kind, folder in folders.items():
            if not os.path.isdir(folder):
                os.makedirs(folder)
            paths = []
            for stem, figure in charts(kind, frame, ratios, merged):
                paths.extend(_save(figure, folder, stem))
            if not paths:
                title, text = EMPTY.get(kind, ("Nothing to draw", "This run has no rows."))
                paths = _placeholder(folder, "not-in-this-run", title, text)
            written[kind] = paths
    return written
