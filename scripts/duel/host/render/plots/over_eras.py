"""Charts across eras: the eras side by side on the same cell and point, and each figure
against the eras' release dates."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from duel.cell import contract  # noqa: E402

from duel.host.render.plots.base import (  # noqa: E402
    Series, _bar_figure, _colour, _plain_log_axis, _title, era_colour)
from duel.host.stacks import eras  # noqa: E402
from duel.host.tables import scopes, summary  # noqa: E402
from duel.host.verdicts import timeline  # noqa: E402


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
