"""What every chart of a run shares: the style, a colour per mode (the mode registry's) and
per era, panels, titles, gap marks, and the bar and line figures most kinds are drawn as."""
import os
import textwrap
from collections import namedtuple

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib import ticker, transforms  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from duel.cell import contract, modes  # noqa: E402

from duel.host.stacks import eras  # noqa: E402
from duel.host.tables import scopes  # noqa: E402
from duel.host.verdicts import statistics  # noqa: E402

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
    return modes.COLOURS.get((framework, mode), "#333333")


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
