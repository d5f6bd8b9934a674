"""Plain HTML pages: the statistics and the environment of a run (the Snakemake report shows
them), and the pieces the published site (store/site.py) builds its pages from.

Self-contained (no script, no external style sheet): the report embeds each page as it is.
"""
import html
import math
import platform
import re
from importlib import metadata

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
td.verdict.equivalent { background: #dcebd5; }
td.verdict.unclear { background: #eeeeee; }
pre { background: #f7f7f7; padding: 0.5em; font-size: 12px; }
"""
HOST_PACKAGES = ("snakemake", "pandas", "numpy", "pyarrow", "openpyxl", "matplotlib")
FAVOURS = {"PyTorch faster": "pytorch", "TensorFlow faster": "tensorflow"}  # a point's verdict
NUMBER = re.compile(r"^-?[0-9.][0-9.e+-]*$")  # a cell's text that is a number (right-aligned)


def escape(value):
    """A value as HTML text: floats with 4 significant digits (ratios), missing values empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else "%.4g" % value
    try:
        if value != value:  # pandas' missing markers
            return ""
    except TypeError:
        return ""
    return html.escape(str(value))


def link(href, text):
    return '<a href="%s">%s</a>' % (escape(href), escape(text))


def image(src, alt):
    """An image as a paragraph of its own."""
    return '<p><img src="%s" alt="%s"></p>' % (escape(src), escape(alt))


def table(header, rows, classes=None, wrap=(), numeric=None):
    """A table of cells given as HTML already (``escape`` them): numbers right, text left, as
    ``numeric`` says per column or else by each cell's text; ``classes`` per row and cell;
    ``wrap``: the columns that break their lines where a page keeps the others whole."""
    def align(column, cell):
        number = numeric[column] if numeric is not None else bool(NUMBER.match(cell or ""))
        return "num" if number else "text"
    first = rows[0] if rows else [""] * len(header)
    out = ["<table><tr>%s</tr>" % "".join(
        '<th class="%s">%s</th>' % (align(column, cell), escape(name))
        for column, (name, cell) in enumerate(zip(header, first)))]
    for index, row in enumerate(rows):
        extra = classes[index] if classes else [""] * len(row)
        cells = []
        for column, (name, cell, css) in enumerate(zip(header, row, extra)):
            words = [align(column, cell), "wrap" if name in wrap else "", css]
            cells.append('<td class="%s">%s</td>' % (" ".join(w for w in words if w), cell))
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</table>")
    return "\n".join(out)


def frame_table(frame, classes=None):
    """``frame`` as a table, aligned by dtype (an object column of numbers stays text)."""
    return table(list(frame.columns),
                 [[escape(value) for value in row] for row in frame.itertuples(index=False)],
                 classes, numeric=[dtype.kind in "if" for dtype in frame.dtypes])


def verdict_class(winner, decision=None):
    """The classes colouring a verdict's cell (STYLE): ``winner`` the framework clearly faster
    (pairs.FRAMEWORKS); else a colour of its own where ``decision`` is equivalent (an answer,
    unlike undecided), grey."""
    if winner:
        return "verdict %s" % winner
    return "verdict %s" % ("equivalent" if decision == statistics.EQUIVALENT else "unclear")


def page(title, body, style=STYLE, nav=""):
    """A whole page: ``title``, then ``body`` (HTML); ``nav``: links above the title."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"
            "<style>%s</style></head><body>%s<h1>%s</h1>\n%s\n</body></html>\n"
            % (escape(title), style, "<nav>%s</nav>" % nav if nav else "", escape(title), body))


def statistics_page(ratios, pairs, headline, noise=None, min_effect=statistics.MIN_EFFECT):
    """Who is faster where and how sure: counts per pair of modes, the 2019 headline, every
    point (its verdict coloured), and how much each point's processes differed."""
    coloured = [[verdict_class(FAVOURS.get(verdict), decision) if column == "verdict" else ""
                 for column in ratios.columns]
                for verdict, decision in zip(ratios["verdict"], statistics.decisions(ratios))]
    body = [
        "<p>%s</p>" % escape(statistics.method_text(min_effect)),
        "<h2>At a glance: decisions per pair of modes</h2>",
        "<p>Points each framework clearly wins, equivalent and undecided; geomean_ratio: "
        "geometric mean of the compared points' ratios; replicates: the processes per point "
        "each verdict rests on (the fewest of the pair).</p>",
        frame_table(pairs),
        "<h2>The 2019 headline: mean over models per framework and device</h2>",
        "<p>mean_s is the 2019 aggregation (mean of every point that ran, seconds per call); "
        "median_s its robust counterpart; the published rows were measured on other hardware, so "
        "compare ratios and rankings, not seconds.</p>",
        frame_table(headline[["source", "hardware", "era", "device", "framework", "mode", "task",
                              "method", "mean_s", "median_s", "ok_points", "points", "models"]]),
        "<h2>Every paired point</h2>",
        frame_table(ratios, coloured),
    ]
    if noise is not None and len(noise) and noise["replicates"].max() >= 2:
        body += [
            "<h2>Spread between processes</h2>",
            "<p>Each point's replicate figures (ms), the slowest over the fastest "
            "(replicate_spread) and their coefficient of variation; noisy: spread above "
            "%d%%.</p>" % round(100 * (statistics.NOISY_SPREAD - 1)),
            frame_table(noise),
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
    body = ["<h2>Each cell</h2>", frame_table(cells.astype(object))]
    body += ["<h2>Software stacks</h2>", "<p>Cells with the same installed set ran on the same "
             "software; lock_match: that set is exactly its lock file's.</p>",
             frame_table(summary.stacks(frame).astype(object))]
    if manifests:
        body.append("<h2>Run manifests (what each invocation ran, to rebuild it)</h2><ul>%s</ul>"
                    % "".join("<li>%s</li>" % link(path, path) for path in manifests))
    for era, path in lock_files:
        pins = locks.set_text(locks.read_pins(path))  # the pins; the file adds their hashes
        body.append("<h2>Era %s: pinned packages (%s, SHA-256 %s)</h2>" % (
            escape(era), escape(path), locks.lock_sha256(path)))
        body.append("<pre>%s</pre>" % escape(pins))
    body.append("<h2>Host software that merged the run and made this report</h2>")
    body.append("<pre>%s</pre>" % escape("\n".join("%s %s" % pair for pair in host_versions())))
    return page("Environment of every number", "\n".join(body))
