"""Task generation's chart: PyTorch / TensorFlow time to first token and per output token per
model and point, a marker per pair of modes with its interval (also drawn on the site's scope
pages)."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from duel.host.render.plots.base import (  # noqa: E402
    _by_scope, _finish, _mark_gap, _panels, _plain_log_axis)
from duel.host.tables import scopes  # noqa: E402
from duel.host.verdicts import generation, statistics  # noqa: E402


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
