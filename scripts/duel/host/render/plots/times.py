"""Time per call charts: the frameworks side by side (the 2019 charts), against sequence
length, and the deployed runners beside the Python runs of the same graph."""
import matplotlib

matplotlib.use("Agg")

from duel.cell import contract, modes  # noqa: E402

from duel.host.render.plots.base import (  # noqa: E402
    Series, _bar_figure, _by_scope, _colour, _line_figure, _line_series, _series_keys)
from duel.host.tables import scopes, summary  # noqa: E402
from duel.host.verdicts import statistics  # noqa: E402

# The deployment chart: each C/C++ mode beside the Python runs of the same graph (the graph
# mode first, then the artifact loaded in Python, then the C/C++ runner).
DEPLOYMENT_MODES = {mode.framework: tuple(reversed(modes.same_graph_in_python(mode)))
                    + (mode.name,)
                    for mode in modes.MODES if mode.kind == modes.DEPLOYED_CPP}


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
