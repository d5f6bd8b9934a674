"""Charts of what a point measures besides its time: graph modes' speed-up over eager, peak
memory, achieved GFLOP/s, and the spread between its processes."""
import matplotlib

matplotlib.use("Agg")

from duel.cell import contract  # noqa: E402

from duel.host.render.plots.base import (  # noqa: E402
    Series, _bar_figure, _by_scope, _colour, _line_figure, _line_series, _series_keys)
from duel.host.tables import scopes, summary  # noqa: E402
from duel.host.verdicts import pairs, statistics  # noqa: E402


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
