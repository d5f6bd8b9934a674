"""Plain HTML pages the Snakemake report shows: the statistics and the environment of a run.

Self-contained (no script, no external style sheet): the report embeds each page as it is.
"""
import html
import math
import platform
from importlib import metadata

import pandas as pd

from duel.cell import locks

from duel.host.tables import summary
from duel.host.verdicts import statistics

STYLE = """
body { font-family: sans-serif; font-size: 13px; margin: 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
td.verdict.pytorch { background: #cfe0f5; }
td.verdict.tensorflow { background: #f8d3c4; }
td.verdict.unclear { background: #eeeeee; }
pre { background: #f7f7f7; padding: 0.5em; font-size: 12px; }
"""
HOST_PACKAGES = ("snakemake", "pandas", "numpy", "pyarrow", "openpyxl", "matplotlib")


def _cell(value):
    """A table cell's text: numbers with 4 significant digits (ratios) or as they are."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else "%.4g" % value
    try:
        if value != value:  # pandas' missing markers
            return ""
    except TypeError:
        return ""
    return str(value)


def table(frame, name, row_class=None):
    """``frame`` as an HTML table, by pandas' Styler: text left-aligned, numbers right-aligned
    with 4 significant digits, missing values empty, everything escaped; ``row_class(row)`` is a
    class given to every cell of its row (the verdict colours). ``name`` keeps the table's
    style apart from the other tables of its page."""
    frame = frame.reset_index(drop=True)
    text_columns = [column for column in frame.columns if frame[column].dtype.kind not in "if"]
    classes = pd.DataFrame(
        [[" ".join(word for word in (
            "verdict" if column == "verdict" else "",
            "text" if column in text_columns else "num",
            row_class(row) if row_class else "") if word)
          for column in frame.columns]
         for _, row in frame.iterrows()],
        index=frame.index, columns=frame.columns)
    styler = (frame.style.hide(axis="index").format(_cell, escape="html")
              .format_index(escape="html", axis=1).set_td_classes(classes).set_uuid(name)
              .set_table_styles({column: [{"selector": "th", "props": "text-align: left"}]
                                 for column in text_columns}, overwrite=False))
    return styler.to_html()


def page(title, body, style=STYLE, nav=""):
    """A whole page: ``title``, then ``body`` (HTML); ``nav``: links above the title."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"
            "<style>%s</style></head><body>%s<h1>%s</h1>\n%s\n</body></html>\n"
            % (html.escape(title), style, "<nav>%s</nav>" % nav if nav else "",
               html.escape(title), body))


def _verdict_class(row):
    verdict = str(row["verdict"])
    if verdict == "PyTorch faster":
        return "pytorch"
    if verdict == "TensorFlow faster":
        return "tensorflow"
    return "unclear"


def statistics_page(ratios, pairs, headline, noise=None, min_effect=statistics.MIN_EFFECT):
    """Who is faster where and how sure: counts per pair of modes, the 2019 headline, every
    point, and how much each point's processes differed."""
    body = [
        "<p>%s</p>" % html.escape(statistics.method_text(min_effect)),
        "<h2>At a glance: clear wins per pair of modes</h2>",
        "<p>geomean_ratio: geometric mean of the compared points' ratios; replicates: the "
        "processes per point each verdict rests on (the fewest of the pair).</p>",
        table(pairs, "pairs"),
        "<h2>The 2019 headline: mean over models per framework and device</h2>",
        "<p>mean_s is the 2019 aggregation (mean of every point that ran, seconds per call); "
        "median_s its robust counterpart; the published rows were measured on other hardware, so "
        "compare ratios and rankings, not seconds.</p>",
        table(headline[["source", "hardware", "era", "device", "framework", "mode", "task",
                        "method", "mean_s", "median_s", "ok_points", "points", "models"]],
              "headline"),
        "<h2>Every paired point</h2>",
        table(ratios, "ratios", _verdict_class),
    ]
    if noise is not None and len(noise) and noise["replicates"].max() >= 2:
        body += [
            "<h2>Spread between processes</h2>",
            "<p>Each point's replicate figures (ms), the slowest over the fastest "
            "(replicate_spread) and their coefficient of variation; noisy: spread above "
            "%d%%.</p>" % round(100 * (statistics.NOISY_SPREAD - 1)),
            table(noise, "noise"),
        ]
    return page("PyTorch vs TensorFlow: how sure is each difference", "\n".join(body))


def host_versions():
    """The versions of the software that made the report itself."""
    rows = [("python", platform.python_version())]
    for name in HOST_PACKAGES:
        try:
            rows.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            rows.append((name, "not installed"))
    return rows


def environment_page(frame, lock_files, manifests=()):
    """One row per cell (software, hardware, threads, runner, commit, config hash), the lock
    file of every era in the run, links to the run manifests (``duel rebuild`` reads
    them), and the host software that made the report."""
    columns = summary.CELL_KEYS + summary.ENVIRONMENT
    cells = frame[columns].drop_duplicates(subset=summary.CELL_KEYS)
    body = ["<h2>Each cell</h2>", table(cells.astype(object), "cells")]
    body += ["<h2>Software stacks</h2>", "<p>Cells with the same installed set ran on the same "
             "software; lock_match: that set is exactly its lock file's.</p>",
             table(summary.stacks(frame).astype(object), "stacks")]
    if manifests:
        body.append("<h2>Run manifests (what each invocation ran, to rebuild it)</h2><ul>%s</ul>"
                    % "".join('<li><a href="%s">%s</a></li>' % (html.escape(path),
                                                                html.escape(path))
                              for path in manifests))
    for era, path in lock_files:
        pins = locks.set_text(locks.read_pins(path))  # the pins; the file adds their hashes
        body.append("<h2>Era %s: pinned packages (%s, SHA-256 %s)</h2>" % (
            html.escape(era), html.escape(path), locks.lock_sha256(path)))
        body.append("<pre>%s</pre>" % html.escape(pins))
    body.append("<h2>Host software that merged the run and made this report</h2>")
    body.append("<pre>%s</pre>" % html.escape(
        "\n".join("%s %s" % pair for pair in host_versions())))
    return page("Environment of every number", "\n".join(body))
