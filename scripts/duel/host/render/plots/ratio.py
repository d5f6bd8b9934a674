"""The chart at a glance: a heat map of PyTorch / TensorFlow per model and point, marked by
the judge's decision."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from duel.cell import contract  # noqa: E402

from duel.host.render.plots.base import (  # noqa: E402
    GAP_NOTE, _by_scope, _panels, _title, _wrapped)
from duel.host.tables import scopes, summary  # noqa: E402
from duel.host.verdicts import pairs, statistics  # noqa: E402


def _heat_colour_limit(ratios):
    """The colour scale's reach in log2: the largest ratio seen, but at least 2x either way, so
    a 10% difference never looks as strong as a two-fold one."""
    values = [abs(np.log2(value)) for value in ratios if value and value > 0]
    return max([1.0] + values)


def ratio_charts(frame, ratios):
    """At a glance: a heat map per pair of modes, rows models, columns points, of the pair the
    run's views show (pairs.SHOWN)."""
    ratios = pairs.shown(ratios).copy()
    if ratios.empty:
        return
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
