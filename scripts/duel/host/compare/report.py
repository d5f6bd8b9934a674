"""The outputs of a comparison of two runs (changes.py), written all at once.

In the output folder: ``comparison.md`` (a short summary to paste into a pull request),
``comparison.csv`` (every point), ``environment.csv`` (what changed), ``comparison.xlsx``
(sheets ``summary``, ``points``, ``environment``, and ``generation`` where a run generated
text) and ``comparison.png`` / ``.svg`` (new / base
per point, a panel per cell, coloured by verdict). Everything is written into a temporary
folder beside the output and moved in at the end, so a failure leaves no partial output.
"""
import math
import os
import shutil
import tempfile

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from duel.cell import files  # noqa: E402

from duel.host.compare import changes  # noqa: E402
from duel.host.tables import scopes  # noqa: E402
from duel.host.verdicts import generation  # noqa: E402

FILES = ("comparison.md", "comparison.csv", "environment.csv", "comparison.xlsx",
         "comparison.png", "comparison.svg")
COLOURS = {
    changes.SLOWER: "#d62728",
    changes.FASTER: "#2ca02c",
    changes.EQUIVALENT: "#bcbd22",
    changes.UNDECIDED: "#7f7f7f",
    changes.NEWLY_FAILING: "#9467bd",
    changes.NEWLY_OK: "#17becf",
}
MARKED = {  # verdicts without a ratio: a label where the point would be
    changes.NEWLY_FAILING: "new fails",
    changes.NEWLY_OK: "new ok",
    changes.NOT_COMPARED: "not ok",
    changes.ONLY_BASE: "base only",
    changes.ONLY_NEW: "new only",
}
STYLE = {"font.size": 8, "axes.titlesize": 9, "figure.titlesize": 10, "axes.grid": True,
         "grid.alpha": 0.3, "savefig.dpi": 110, "svg.fonttype": "none",
         "svg.hashsalt": "duel"}


def _number(value, digits=3):
    if value is None or pd.isna(value):
        return ""
    return "%.*g" % (digits, float(value))


def _present(value):
    return value is not None and not pd.isna(value) and value != ""


def _ms(value):
    """Milliseconds to 3 significant digits, without an exponent."""
    if value is None or pd.isna(value):
        return ""
    return "%.0f" % value if abs(value) >= 100 else "%.3g" % value


def _interval(row):
    if row["ci_low"] is None or pd.isna(row["ci_low"]):
        return ""
    return "%s-%s" % (_number(row["ci_low"]), _number(row["ci_high"]))


def ci_status_line(result):
    """What the exit status says, in one sentence."""
    beyond = int(result.points["beyond_threshold"].sum())
    if beyond:
        return ("Exit 1: %d point(s) clearly slower by more than %g%% (the whole interval "
                "above 1 + %g)." % (beyond, 100 * result.threshold, result.threshold))
    if result.exit_status:
        return "Exit 1: %d point(s) newly failing." % int(
            (result.points["verdict"] == changes.NEWLY_FAILING).sum())
    return "Exit 0: no point clearly slower by more than %g%%." % (100 * result.threshold)


def _interval_note(points):
    kinds = set(points["interval"].dropna())
    if not kinds:
        return "No point had enough samples for an interval."
    if kinds == {changes.statistics.BETWEEN}:
        return "Intervals are between processes (both runs have several replicates)."
    return ("Some intervals are within one process only (a side has one replicate, or the sides "
            "differ): they miss the variation between processes and are too narrow.")


def _run_line(name, run):
    start = changes.started(run)
    replicates = sorted(set(int(value) for value in run.points["replicates"]))
    commits = sorted(set(str(value) for value in run.frame["git_commit"].dropna()))
    return "- %s: `%s` (%d points, replicates %s, started %s, commit %s)" % (
        name, run.path, len(run.points), "/".join(str(value) for value in replicates),
        start.strftime("%Y-%m-%d %H:%M UTC") if start is not None else "unknown",
        ", ".join(commit[:12] for commit in commits) or "unknown")


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(value).replace("|", "\\|") for value in row) + " |")
    return lines


def markdown(result, limit=20):
    """A short summary for a pull request: warnings first, then counts, what changed and the
    points that matter."""
    points = result.points
    lines = ["**%s**" % line for line in result.warnings]
    if lines:
        lines.append("")
    lines.append("### Duel comparison: new / base time per point")
    lines.append("")
    lines.append(_run_line("base", result.base))
    lines.append(_run_line("new", result.new))
    lines.append("")
    counts = changes.verdict_counts(points)
    lines.append(", ".join("%s %d" % (verdict, count) for verdict, count in counts.values
                           if count) + " (of %d points)." % len(points))
    lines.append("%s A change counts only when its whole 95%% interval lies beyond %g%%. "
                 "%s" % (ci_status_line(result), 100 * result.min_effect,
                         _interval_note(points)))
    lines.append("")
    lines.append("#### What changed")
    lines.append("")
    if result.environment.empty:
        lines.append("No environment column differs between matched cells.")
    else:
        lines += _table(["column", "base", "new", "cells"],
                        [(row["column"], row["base"], row["new"], row["which"])
                         for _, row in result.environment.iterrows()])
    notable = points[points["verdict"].isin(
        [changes.SLOWER, changes.FASTER, changes.NEWLY_FAILING, changes.NEWLY_OK])]
    lines.append("")
    lines.append("#### Points that changed")
    lines.append("")
    if notable.empty:
        lines.append("None.")
    else:
        notable = notable.assign(_order=notable["verdict"].map(
            {verdict: index for index, verdict in enumerate(changes.VERDICTS)}))
        notable = notable.sort_values(["_order", "ratio"], ascending=[True, False])
        rows = [(row["cell"], row["point"], row.get("method", ""), _ms(row["base_ms"]),
                 _ms(row["new_ms"]), _number(row["ratio"]), _interval(row),
                 row["verdict"] + (" (%s)" % row["note"] if _present(row["note"]) else ""))
                for _, row in notable.head(limit).iterrows()]
        lines += _table(["cell", "point", "method", "base ms", "new ms", "new/base",
                         "95% interval", "verdict"], rows)
        if len(notable) > limit:
            lines.append("")
            lines.append("... and %d more in comparison.csv." % (len(notable) - limit))
    lines += generation_markdown(result.generation)
    return "\n".join(lines) + "\n"


def _rates(row, side):
    rates = [row["tokens_per_s_%s%s" % (framework, side)] for framework in ("pt", "tf")]
    return "" if any(rate is None or pd.isna(rate) for rate in rates) else "%.1f / %.1f" % tuple(
        rates)


def generation_markdown(table):
    """The generation verdicts that changed between the runs (changes.generation_changes), as
    the points that changed are listed; nothing where neither run generated text."""
    if table.empty:
        return []
    lines = ["", "#### Generation verdicts that changed", "",
             "PyTorch / TensorFlow per pair of modes, geometric mean over its points with its "
             "95%% interval (< 1: PyTorch faster); tokens per second PyTorch / TensorFlow. "
             "%d of %d pairs changed." % ((table["change"] != "").sum(), len(table)), ""]
    changed = table[table["change"] != ""]
    if changed.empty:
        return lines + ["None."]
    kept = [name for name in scopes.SCOPE if name in table.columns]  # those not ignored
    rows = []
    for _, row in changed.iterrows():
        scope = " ".join(str(row[key]) for key in kept)
        rows.append(["%s, PyTorch %s vs TensorFlow %s" % (scope, row["mode_pt"], row["mode_tf"])]
                    + [generation.ratio_text(row, name, side) for name, _ in generation.FIGURES
                       for side in ("_base", "_new")]
                    + [_rates(row, "_base"), _rates(row, "_new"), row["change"]])
    header = ["pair"] + ["%s, %s" % (words, side) for _, words in generation.FIGURES
                         for side in ("base", "new")] + ["tokens/s base", "tokens/s new",
                                                          "what changed"]
    return lines + _table(header, rows)


def summary_rows(result):
    """The spreadsheet's summary sheet: the warnings, both runs, the settings, the counts."""
    rows = [[line] for line in result.warnings]
    rows += [["base", result.base.path], ["new", result.new.path],
             ["matched on", ", ".join(result.keys)],
             ["ignored", ", ".join(result.ignore) or "nothing"],
             ["minimum effect", result.min_effect], ["threshold", result.threshold],
             ["confidence", result.confidence],
             ["machine shift (canary new / base, 1: none counted)", result.machine_shift],
             [ci_status_line(result)],
             [_interval_note(result.points)], [], ["verdict", "points"]]
    rows += [list(row) for row in changes.verdict_counts(result.points).values]
    return rows


def write_workbook(result, path):
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        pd.DataFrame(summary_rows(result)).to_excel(writer, sheet_name="summary", index=False,
                                                    header=False)
        result.points.to_excel(writer, sheet_name="points", index=False)
        result.environment.to_excel(writer, sheet_name="environment", index=False)
        if not result.generation.empty:
            result.generation.to_excel(writer, sheet_name="generation", index=False)


def minor_label(span):
    """Labels of a log axis' minor ticks: all of them on a narrow axis, else only 2x and 5x."""
    def label(value, _):
        mantissa = round(value / 10 ** math.floor(math.log10(value)), 6)
        return "%g" % value if span < 3 or mantissa in (2.0, 5.0) else ""
    return label


def draw_chart(result, stem):
    """new / base per point on a log scale, a panel per cell, coloured by verdict, the interval
    as an error bar, the band of the minimum effect shaded; points without a ratio labelled."""
    points = result.points
    cells = list(dict.fromkeys(points["cell"]))
    columns = min(3, len(cells))
    rows = int(math.ceil(len(cells) / float(columns)))
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows + 0.8),
                                    squeeze=False, sharey=True)
        ratios = points["ratio"].dropna().astype(float)
        highs = points["ci_high"].dropna().astype(float)
        lows = points["ci_low"].dropna().astype(float)
        top = max([1.0 + 2 * result.min_effect] + list(ratios) + list(highs)) * 1.1
        bottom = min([1.0 / (1.0 + 2 * result.min_effect)] + list(ratios) + list(lows)) / 1.1
        for axis, cell in zip(axes.flat, cells):
            group = points[points["cell"] == cell]
            labels = [row["point"] + ("" if "method" in result.keys and
                                      points["method"].nunique() == 1
                                      else " %s" % row.get("method", row.get("method_new")))
                      for _, row in group.iterrows()]
            axis.axhspan(1.0 / (1.0 + result.min_effect), 1.0 + result.min_effect,
                         color="#dddddd", alpha=0.5, zorder=0)
            axis.axhline(1.0, color="black", linewidth=0.8)
            for index, (_, row) in enumerate(group.iterrows()):
                if row["ratio"] is None or pd.isna(row["ratio"]):
                    axis.text(index, 1.0, MARKED.get(row["verdict"], row["verdict"]),
                              ha="center", va="center", rotation=90, fontsize=7,
                              color=COLOURS.get(row["verdict"], "black"))
                    continue
                colour = COLOURS[row["verdict"]]
                if row["ci_low"] is not None and not pd.isna(row["ci_low"]):
                    error = [[row["ratio"] - row["ci_low"]], [row["ci_high"] - row["ratio"]]]
                    axis.errorbar([index], [row["ratio"]], yerr=error, fmt="o", color=colour,
                                  capsize=3)
                else:
                    axis.plot([index], [row["ratio"]], "o", color=colour, fillstyle="none")
            axis.set_xticks(range(len(labels)))
            axis.set_xticklabels(labels, rotation=45, ha="right")
            axis.set_xlim(-0.7, len(labels) - 0.3)
            axis.set_yscale("log")
            axis.set_ylim(bottom, top)
            axis.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: "%g" % value))
            axis.yaxis.set_minor_formatter(ticker.FuncFormatter(minor_label(top / bottom)))
            axis.set_title(cell)
            axis.set_ylabel("new / base time (> 1: slower)")
        for axis in list(axes.flat)[len(cells):]:
            axis.set_visible(False)
        handles = [Line2D([], [], marker="o", linestyle="none", color=colour, label=verdict)
                   for verdict, colour in COLOURS.items()]
        figure.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
        statistics = ", ".join(sorted(set(points["statistic"].dropna())))
        title = ("new / base time per point (%s), 95%% interval; grey band: within %g%%"
                 % (statistics, 100 * result.min_effect))
        if result.warnings:
            title = result.warnings[0] + "\n" + title
        figure.suptitle(title, wrap=True)
        figure.tight_layout(rect=(0, 0.06, 1, 0.95))
        for extension in ("png", "svg"):
            figure.savefig("%s.%s" % (stem, extension))
        plt.close(figure)


def write_files(result, folder):
    """Every output file of ``result`` in ``folder`` (which exists)."""
    with open(os.path.join(folder, "comparison.md"), "w") as handle:
        handle.write(markdown(result))
    result.points.to_csv(os.path.join(folder, "comparison.csv"), index=False)
    result.environment.to_csv(os.path.join(folder, "environment.csv"), index=False)
    write_workbook(result, os.path.join(folder, "comparison.xlsx"))
    draw_chart(result, os.path.join(folder, "comparison"))


def check_output(folder):
    """Bad input, before anything runs: an output path that is a file."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise changes.CompareError("%s exists and is not a folder" % folder)


def write_outputs(result, folder):
    """Write the outputs into a temporary folder beside ``folder``, then move them in."""
    check_output(folder)
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".comparison-", dir=parent)
    try:
        write_files(result, staging)
        os.makedirs(folder, exist_ok=True)
        files.move_into(staging, folder, FILES)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
