"""Plain HTML pages: the statistics and the environment of a run (the Snakemake report shows
them), and the pieces the published site (store/site.py) builds its pages from.

The markup is Jinja2 templates (templates/, shipped with the package) with autoescaping on:
a value reaches a page as text and the engine escapes it; only the pieces made by the templates'
own macros (tables, links) go in as HTML.
"""
import math
import platform
import re
from importlib import metadata

import jinja2

from duel.cell import locks

from duel.host.tables import summary
from duel.host.verdicts import statistics

HOST_PACKAGES = ("snakemake", "pandas", "numpy", "pyarrow", "openpyxl", "matplotlib")
FAVOURS = {"PyTorch faster": "pytorch", "TensorFlow faster": "tensorflow"}  # a point's verdict
NUMBER = re.compile(r"^-?[0-9.][0-9.e+-]*$")  # a cell's text that is a number (right-aligned)


def text(value):
    """A value as a page shows it: floats with 4 significant digits (ratios), missing values
    empty; text (HTML made by a macro too) as it is. Every value a template prints goes through
    it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return "" if math.isnan(value) else "%.4g" % value
    try:
        if value != value:  # pandas' missing markers
            return ""
    except TypeError:
        return ""
    return str(value)


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("duel.host.render", "templates"), autoescape=True,
    finalize=text, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True)


def render(template, **values):
    """The page ``template`` (a path under templates/) filled with ``values``."""
    return TEMPLATES.get_template(template).render(**values)


def _piece(name, *args):
    """The HTML of the macro ``name`` of templates/pieces.html."""
    return getattr(TEMPLATES.get_template("pieces.html").module, name)(*args)


def link(href, words):
    return _piece("link", href, words)


def anchor(name, words, after=""):
    """``words`` that a link can point at (page.html#name), ``after`` them."""
    return _piece("anchor", name, words, after)


def lines(pieces):
    """Pieces (text or links) one under the other in a cell."""
    return _piece("lines", pieces)


def table(header, rows, classes=None, wrap=(), numeric=None):
    """A table of values (text; HTML only from link, anchor or lines): numbers right, text left,
    as ``numeric`` says per column or else by each cell's text; ``classes`` per row and cell;
    ``wrap``: the columns that break their lines where a page keeps the others whole."""
    def align(column, cell):
        number = numeric[column] if numeric is not None else bool(NUMBER.match(text(cell)))
        return "num" if number else "text"
    first = rows[0] if rows else [""] * len(header)
    heads = [(align(column, cell), name)
             for column, (name, cell) in enumerate(zip(header, first))]
    cells = []
    for index, row in enumerate(rows):
        extra = classes[index] if classes else [""] * len(row)
        cells.append([(" ".join(word for word in (align(column, cell),
                                                  "wrap" if name in wrap else "", css) if word),
                       cell)
                      for column, (name, cell, css) in enumerate(zip(header, row, extra))])
    return _piece("table", heads, cells)


def frame_table(frame, classes=None):
    """``frame`` as a table, aligned by dtype (an object column of numbers stays text)."""
    return table(list(frame.columns), [list(row) for row in frame.itertuples(index=False)],
                 classes, numeric=[dtype.kind in "if" for dtype in frame.dtypes])


def verdict_class(winner, decision=None):
    """The classes colouring a verdict's cell (templates/page.css): ``winner`` the framework
    clearly faster (its name); else a colour of its own where ``decision`` is
    equivalent (an answer, unlike undecided), grey."""
    if winner:
        return "verdict %s" % winner
    return "verdict %s" % ("equivalent" if decision == statistics.EQUIVALENT else "unclear")


def statistics_page(ratios, pairs, headline, noise=None, min_effect=statistics.MIN_EFFECT):
    """Who is faster where and how sure: counts per pair of modes, the 2019 headline, every
    point (its verdict coloured), and how much each point's processes differed."""
    coloured = [[verdict_class(FAVOURS.get(verdict), decision) if column == "verdict" else ""
                 for column in ratios.columns]
                for verdict, decision in zip(ratios["verdict"], statistics.decisions(ratios))]
    spread = noise is not None and len(noise) and noise["replicates"].max() >= 2
    return render(
        "statistics.html", title="PyTorch vs TensorFlow: how sure is each difference",
        method=statistics.method_text(min_effect), pairs=frame_table(pairs),
        headline=frame_table(headline[[
            "source", "hardware", "era", "device", "framework", "mode", "task", "method",
            "mean_s", "median_s", "ok_points", "points", "models"]]),
        ratios=frame_table(ratios, coloured), noise=frame_table(noise) if spread else None,
        noisy_percent=round(100 * (statistics.NOISY_SPREAD - 1)))


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
    eras = [dict(era=era, path=path, sha256=locks.lock_sha256(path),
                 pins=locks.set_text(locks.read_pins(path)))  # the file adds their hashes
            for era, path in lock_files]
    return render("environment.html", title="Environment of every number",
                  cells=frame_table(cells.astype(object)),
                  stacks=frame_table(summary.stacks(frame).astype(object)),
                  manifests=list(manifests), locks=eras,
                  host=["%s %s" % pair for pair in host_versions()])
