"""The results store published as a static site: plain files that open from file:// and from any
static host (as ``asv publish`` makes one), written by ``duel publish``. That is its one job.

Pages, every link relative:

    index.html                 every run, newest first: when, machine, eras, commit, points,
                               the headline recorded when it was added; links to the pages below
    scope/<scope>.html         per scope (era, device, precision, task, method): the PyTorch /
                               TensorFlow verdict of each run per pair of modes (geometric-mean
                               ratio, points each framework clearly wins: statistics.pair_summary)
    model/<model>.html         per model, machine and scope: a trend chart (one axes per batch x
                               length point, a line per framework and mode, the run's figure
                               against its start time, its interval as a band) and the latest
                               figures in a table
    machines.html              where runs differ only by machine: the latest run of each machine,
                               side by side per point

Why no JavaScript: nothing to audit or to fetch from a CDN, and a page opened from file:// shows
all of it. The charts are matplotlib SVG files beside the pages (the project's one plotting
library, already locked; text stays text in the SVG).

Why verdicts for the latest runs only: judging a run takes its samples and tens of milliseconds,
so a store of a thousand runs would take minutes; the latest VERDICT_RUNS runs are judged (each
once, its rows read in one query) and every page says how many that is. The trend charts and
tables cover every run, from the store's per-run figures (questions.history).
"""
import datetime
import html
import os
import re
import shutil

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import dates as mdates  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from duel.host.render import pages, plots  # noqa: E402
from duel.host.store import archive, questions  # noqa: E402
from duel.host.tables import replicates, scopes, summary  # noqa: E402
from duel.host.verdicts import statistics  # noqa: E402

VERDICT_RUNS = 200
MACHINE_GROUPS = 3  # groups of runs differing only by machine shown, latest first
MARKER = ".duel-site"  # in every folder publish wrote: only such a folder is replaced
RUN_COLUMNS = ["run_id", "started_at", "status", "machine", "eras", "devices", "git_commit",
               "lock_sha256", "points", "processes", "headline"]
# The columns a run's verdict needs: its points' identity, status and samples (summary.py's
# point table over these alone is the same for the verdict, and a fraction of the work).
VERDICT_COLUMNS = (scopes.SCOPE + ["model", "framework", "mode", "batch_size", "seq_len",
                                   "replicate", "attempt", "counted", "status", "message",
                                   "samples", "n_samples", "median", "mean", "framework_version",
                                   "achieved_gflops"])
SAME_RUN = ["eras", "devices", "git_commit", "lock_sha256"]  # runs alike but for the machine
STYLE = pages.STYLE + """
a { color: #1f4e9a; }
nav a { margin-right: 1em; }
td.pytorch { background: #cfe0f5; }
td.tensorflow { background: #f8d3c4; }
img { max-width: 100%; border: 1px solid #ddd; }
p.note { color: #555; }
"""
SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _e(value):
    """A value as escaped HTML text; missing values empty."""
    if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return "%.4g" % value
    return html.escape(str(value))


def _link(href, text):
    return '<a href="%s">%s</a>' % (html.escape(href, quote=True), _e(text))


def _table(header, rows, classes=None):
    """An HTML table of cells given as HTML already (``_e`` them); ``classes`` per row."""
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % _e(name) for name in header)]
    for index, row in enumerate(rows):
        extra = classes[index] if classes else [""] * len(row)
        out.append("<tr>%s</tr>" % "".join(
            '<td class="%s">%s</td>' % (" ".join(("text" if not _numeric(cell) else "num",
                                                  css)).strip(), cell)
            for cell, css in zip(row, extra)))
    out.append("</table>")
    return "\n".join(out)


def _numeric(cell):
    return bool(re.match(r"^-?[0-9.][0-9.e+-]*$", cell or ""))


def _page(title, body, depth=0):
    """A whole page: a link home (``depth`` folders below the index), the title, ``body``."""
    home = "../" * depth + "index.html"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"
            "<style>%s</style></head><body><nav>%s</nav><h1>%s</h1>\n%s\n</body></html>\n"
            % (html.escape(title), STYLE, _link(home, "All runs"), html.escape(title), body))


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _name(*parts):
    """A file name from config names (which hold only letters, digits, '.', '_', '-')."""
    return "_".join(SAFE.sub("-", str(part)) for part in parts)


def _scope_label(values):
    return " / ".join(str(value) for value in values)


def _short(commit):
    return "" if commit is None or pd.isna(commit) else str(commit)[:10]


def _when(started):
    """'2026-12-03 08:15 UTC' from a run's ISO start time."""
    stamp = pd.to_datetime(started, utc=True, errors="coerce")
    return "" if pd.isna(stamp) else stamp.strftime("%Y-%m-%d %H:%M UTC")


def run_verdicts(store, run_ids):
    """Per run of ``run_ids``: statistics.pair_summary of its rows, each run judged once (a
    frame with run_id; empty where none can be paired)."""
    if not len(run_ids):
        return pd.DataFrame()
    present = set(archive.query(store, "SELECT * FROM points LIMIT 0").columns)
    columns = [name for name in VERDICT_COLUMNS if name in present]
    rows = archive.query(store, "SELECT run_id, %s FROM points WHERE list_contains(?, run_id)"
                         % ", ".join(columns), [list(run_ids)])
    found = []
    for run_id, frame in rows.groupby("run_id", sort=False):
        frame = summary.migrated(frame.drop(columns="run_id"))[VERDICT_COLUMNS]
        frame = replicates.counted(frame).drop(columns=["attempt", "counted"])
        try:
            ratios = statistics.point_ratios(summary.with_reported(frame))
            pairs = statistics.pair_summary(ratios)
        except Exception:  # a run whose rows cannot be paired has no verdict, as its headline
            continue
        pairs.insert(0, "run_id", run_id)
        found.append(pairs)
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def _trend_figure(series, model, machine, scope):
    """One figure: an axes per batch x length point, a line per framework and mode over the
    runs' start times, the interval as a band; a run where the point failed breaks the line."""
    points = sorted(set(zip(series["batch_size"], series["seq_len"])))
    columns = min(3, len(points))
    figure, axes = plots._panels(len(points), columns, 3.6, 2.4)
    keys = sorted(set(zip(series["framework"], series["mode"])),
                  key=lambda key: (key[0] != "pytorch", key))
    times = pd.to_datetime(series["started_at"], utc=True).dt.tz_localize(None)
    span = (times.min() - pd.Timedelta(hours=12), times.max() + pd.Timedelta(hours=12)) \
        if times.min() == times.max() else None  # one run: a day around it
    for axis, (batch, length) in zip(axes, points):
        at = series[(series["batch_size"] == batch) & (series["seq_len"] == length)]
        plotted = False
        for framework, mode in keys:
            line = at[(at["framework"] == framework) & (at["mode"] == mode)]
            if line.empty:
                continue
            when = pd.to_datetime(line["started_at"], utc=True).dt.tz_localize(None)
            colour = plots._colour(framework, mode)
            axis.plot(when, line["figure_ms"], color=colour, marker="o", markersize=2.5,
                      linewidth=1.0)
            if line["low_ms"].notna().any():
                axis.fill_between(when, line["low_ms"], line["high_ms"], color=colour,
                                  alpha=0.2, linewidth=0)
            plotted = plotted or line["figure_ms"].notna().any()
        if plotted:
            plots._plain_log_axis(axis)
        if span:
            axis.set_xlim(*span)
        locator = mdates.AutoDateLocator(maxticks=5)
        axis.xaxis.set_major_locator(locator)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        axis.set_title("batch %d x length %d" % (batch, length))
        axis.set_ylabel("time per call (ms)")
        axis.set_xlabel("run start (UTC)")
    handles = [Line2D([], [], color=plots._colour(*key), marker="o", markersize=3,
                      label=scopes.series_label(*key)) for key in keys]
    plots._finish(figure, "%s on %s (%s): each run's figure and 95%% interval over its "
                  "processes" % (model, machine, _scope_label(scope)), False, handles)
    return figure


def _save(figure, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with plt.rc_context(plots.STYLE):
        figure.savefig(path, metadata={"Date": None})
    plt.close(figure)


def _latest_table(series):
    """Per point and framework/mode: the latest run's figure and interval, the first run's,
    and how many runs measured it or failed it."""
    rows = []
    for key, line in series.groupby(["batch_size", "seq_len", "framework", "mode"], sort=True):
        ok = line[line["status"] == "ok"]
        last = ok.iloc[-1] if len(ok) else None
        first = ok.iloc[0] if len(ok) else None
        rows.append([_e("%dx%d" % key[:2]), _e(scopes.series_label(*key[2:])),
                     _e(None if last is None else last["figure_ms"]),
                     _e(None if last is None else last["low_ms"]),
                     _e(None if last is None else last["high_ms"]),
                     _e(None if first is None else first["figure_ms"]),
                     _e(int(len(ok))), _e(int(len(line) - len(ok))),
                     _e(_when(last["started_at"]) if last is not None else None)])
    return _table(["point", "framework mode", "latest ms", "low", "high", "first ms", "runs",
                   "failed runs", "latest run"], rows)


def model_pages(out, history):
    """A page per model; returns {model: its page, relative to ``out``}."""
    written = {}
    for model, rows in history.groupby("model", sort=True):
        body, stem = [], _name(model)
        body.append("<p>Each run's figure for a point (the method's pooled figure over its "
                    "processes: duel, the median of their medians; timeit, the mean of their "
                    "means) against the run's start, a line per framework and mode; the band is "
                    "Student's t 95%% interval over the processes (none with one process). "
                    "A run where the point failed leaves a gap; the table counts them.</p>")
        for (machine, *scope), series in rows.groupby(["machine"] + scopes.SCOPE, sort=True):
            series = series.sort_values(["started_at", "run_id"])
            chart = "%s.svg" % _name(model, machine, *scope)
            with plt.rc_context(plots.STYLE):
                figure = _trend_figure(series, model, machine, scope)
            _save(figure, os.path.join(out, "model", chart))
            body.append("<h2>%s on %s</h2>" % (_e(_scope_label(scope)), _e(machine)))
            body.append('<p><img src="%s" alt="%s"></p>'
                        % (html.escape(chart, quote=True),
                           _e("trend of %s on %s" % (model, machine))))
            body.append(_latest_table(series))
        page = os.path.join("model", "%s.html" % stem)
        _write(os.path.join(out, page), _page("%s over the runs" % model, "\n".join(body), 1))
        written[model] = page
    return written


def _verdict_class(ratio):
    if ratio is None or pd.isna(ratio):
        return ""
    return "pytorch" if ratio < 1 else "tensorflow"


def scope_pages(out, runs, verdicts, scopes_found, judged):
    """A page per scope: per pair of modes, each judged run's verdict, newest first; returns
    {scope values: its page}."""
    written = {}
    by_run = runs.set_index("run_id")
    for scope in scopes_found:
        page = os.path.join("scope", "%s.html" % _name(*scope))
        body = ["<p>%s</p>" % _e(statistics.method_text()),
                "<p>Per pair of modes, each run's geometric-mean PyTorch / TensorFlow ratio over "
                "its compared points (&lt; 1: PyTorch faster) and how many points each framework "
                "clearly wins; open: compared points with no clear difference.</p>",
                '<p class="note">%s</p>' % _e(judged)]
        mine = verdicts
        if len(verdicts):
            mine = verdicts[np.logical_and.reduce(
                [verdicts[name] == value for name, value in zip(scopes.SCOPE, scope)])]
        if mine.empty:
            body.append("<p>No judged run has a PyTorch / TensorFlow pair in this scope.</p>")
        for (mode_pt, mode_tf), pair in mine.groupby(["mode_pt", "mode_tf"], sort=True):
            pair = pair.assign(started_at=pair["run_id"].map(by_run["started_at"]))
            pair = pair.sort_values(["started_at", "run_id"], ascending=False)
            rows, classes = [], []
            for _, row in pair.iterrows():
                run = by_run.loc[row["run_id"]]
                rows.append([_e(_when(run["started_at"])),
                             '<span id="run-%s">%s</span>' % (_e(row["run_id"]),
                                                             _e(row["run_id"])),
                             _e(run["machine"]), _e(_short(run["git_commit"])),
                             _e(row["geomean_ratio"]), _e(row["pytorch_clearly_faster"]),
                             _e(row["tensorflow_clearly_faster"]), _e(row["not_clear"]),
                             _e(row["compared"]), _e(row["points"]), _e(row["replicates"]),
                             _e(row["interval"])])
                classes.append([""] * 4 + [_verdict_class(row["geomean_ratio"])] + [""] * 7)
            body.append("<h2>PyTorch %s vs TensorFlow %s</h2>" % (_e(mode_pt), _e(mode_tf)))
            body.append(_table(["started", "run", "machine", "commit", "geomean ratio",
                                "PyTorch clearly faster", "TensorFlow clearly faster", "open",
                                "compared", "points", "processes", "interval"], rows, classes))
        _write(os.path.join(out, page), _page("Verdicts in %s" % _scope_label(scope),
                                              "\n".join(body), 1))
        written[scope] = page
    return written


def machine_groups(runs):
    """Groups of runs alike but for the machine (same eras, devices, commit and lock), the
    latest run of each machine in each, latest group first; only groups of several machines."""
    if runs.empty:
        return []
    keyed = runs.assign(**{name: runs[name].fillna("") for name in SAME_RUN})
    groups = []
    for _, group in keyed.groupby(SAME_RUN, sort=False):
        latest = group.sort_values(["started_at", "run_id"]).groupby("machine").tail(1)
        if len(latest) >= 2:
            groups.append(latest.sort_values("machine"))
    groups.sort(key=lambda group: group["started_at"].max(), reverse=True)
    return groups[:MACHINE_GROUPS]


def machines_page(out, groups, history):
    """The machines page: per group, a table per scope with a column per machine."""
    body = ["<p>Runs alike in eras, devices, commit and locked stack that ran on different "
            "machines: the latest run of each machine, side by side per point (figure in ms, "
            "with its 95%% interval over the processes). The latest %d such groups.</p>"
            % MACHINE_GROUPS]
    for group in groups:
        machines = list(group["machine"])
        run_of = dict(zip(group["machine"], group["run_id"]))
        body.append("<h2>Commit %s, %s</h2>" % (_e(_short(group["git_commit"].iloc[0])),
                                               _e(group["eras"].iloc[0])))
        body.append("<p>%s</p>" % ", ".join("%s: run %s (%s)" % (
            _e(machine), _e(run_of[machine]), _e(_when(started)))
            for machine, started in zip(group["machine"], group["started_at"])))
        rows = history[history["run_id"].isin(group["run_id"])]
        for scope, scoped in rows.groupby(scopes.SCOPE, sort=True):
            index = ["model", "framework", "mode", "batch_size", "seq_len"]
            lines = []
            for key, point in scoped.groupby(index, sort=True):
                by_machine = dict(zip(point["machine"], point.to_dict("records")))
                cells = [_e(key[0]), _e(scopes.series_label(key[1], key[2])),
                         _e("%dx%d" % key[3:])]
                for machine in machines:
                    row = by_machine.get(machine)
                    if row is None:
                        cells.append("")
                    elif row["status"] != "ok":
                        cells.append(_e(row["status"]))
                    elif pd.isna(row["low_ms"]):
                        cells.append(_e(row["figure_ms"]))
                    else:
                        cells.append("%s [%s, %s]" % (_e(row["figure_ms"]), _e(row["low_ms"]),
                                                      _e(row["high_ms"])))
                lines.append(cells)
            body.append("<h3>%s</h3>" % _e(_scope_label(scope)))
            body.append(_table(["model", "framework mode", "point"] + machines, lines))
    _write(os.path.join(out, "machines.html"),
           _page("The same runs on different machines", "\n".join(body)))
    return "machines.html"


def index_page(out, runs, scope_links, model_links, machines_link, judged, verdicts):
    """index.html: every run, newest first, and links to every other page."""
    nav = ["<h2>Pages</h2>", "<p>Verdicts per scope: %s</p>" % (", ".join(
        _link(page, _scope_label(scope)) for scope, page in sorted(scope_links.items()))
        or "none"),
           "<p>Trends per model: %s</p>" % (", ".join(
               _link(page, model) for model, page in sorted(model_links.items())) or "none")]
    if machines_link:
        nav.append("<p>%s: the latest run of each machine side by side.</p>"
                   % _link(machines_link, "Machines"))
    judged_runs = set(verdicts["run_id"]) if len(verdicts) else set()
    rows = []
    for _, run in runs.iloc[::-1].iterrows():
        links = ""
        if run["run_id"] in judged_runs:
            mine = verdicts[verdicts["run_id"] == run["run_id"]]
            found = sorted(set(map(tuple, mine[scopes.SCOPE].to_numpy())))
            links = " ".join(_link("%s#run-%s" % (scope_links[scope], run["run_id"]),
                                   "/".join(scope))
                             for scope in found if scope in scope_links)
        rows.append([_e(_when(run["started_at"])), _e(run["run_id"]), _e(run["machine"]),
                     _e(run["eras"]), _e(run["devices"]), _e(_short(run["git_commit"])),
                     _e(run["points"]), _e(run["processes"]), _e(run["status"]),
                     _e(run["headline"]), links])
    body = nav + ["<h2>Runs, newest first</h2>",
                  "<p>headline: per pair of modes, the geometric-mean PyTorch / TensorFlow "
                  "ratio (&lt; 1: PyTorch faster) and the points each framework clearly wins "
                  "(PT, TF) or neither (open), as recorded when the run was added.</p>",
                  '<p class="note">%s Published %s.</p>' % (_e(judged), _e(datetime.datetime.now(
                      datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))),
                  _table(["started", "run", "machine", "eras", "devices", "commit", "points",
                          "processes", "status", "headline", "verdicts"], rows)]
    _write(os.path.join(out, "index.html"),
           _page("Duel: PyTorch vs TensorFlow, %d run%s" % (len(runs), "" if len(runs) == 1
                                                              else "s"), "\n".join(body)))


def _fresh_folder(out):
    """A new folder to write the site into, beside ``out``; StoreError where ``out`` holds
    files publish did not write (it is replaced whole)."""
    if os.path.exists(out) and (not os.path.isdir(out) or (
            os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)))):
        raise archive.StoreError("%s exists and is not a site duel publish wrote: give a new "
                                 "or empty folder" % out)
    partial = "%s.partial-%d" % (out.rstrip(os.sep), os.getpid())
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    open(os.path.join(partial, MARKER), "w").close()
    return partial


def _replace(partial, out):
    """The new site in place of the old in two renames, the old one removed after."""
    old = "%s.old-%d" % (out.rstrip(os.sep), os.getpid())
    if os.path.exists(out):
        os.rename(out, old)
    os.rename(partial, out)
    shutil.rmtree(old, ignore_errors=True)


def publish(store, out, verdict_runs=VERDICT_RUNS):
    """Write the site of ``store`` to the folder ``out`` (replaced whole); the pages written,
    relative to it."""
    archive.version(store)
    partial = _fresh_folder(out)
    try:
        runs = archive.query(store, "SELECT %s FROM runs ORDER BY started_at, run_id"
                             % ", ".join(RUN_COLUMNS))
        history = questions.history(store, ())
        latest = list(runs["run_id"].iloc[-verdict_runs:]) if verdict_runs else []
        verdicts = run_verdicts(store, latest)
        judged = ("Verdicts judged for every run (%d)." % len(runs) if len(latest) == len(runs)
                  else "Verdicts judged for the latest %d of %d runs (each run's samples are "
                       "read to judge it); the trend charts cover every run."
                  % (len(latest), len(runs)))
        scopes_found = sorted(set(map(tuple, history[scopes.SCOPE].to_numpy()))
                              | (set(map(tuple, verdicts[scopes.SCOPE].to_numpy()))
                                 if len(verdicts) else set()))
        model_links = model_pages(partial, history)
        scope_links = scope_pages(partial, runs, verdicts, scopes_found, judged)
        groups = machine_groups(runs)
        machines_link = machines_page(partial, groups, history) if groups else None
        index_page(partial, runs, scope_links, model_links, machines_link, judged, verdicts)
        written = sorted(os.path.relpath(os.path.join(folder, name), partial)
                         for folder, _, names in os.walk(partial) for name in names
                         if name != MARKER)
        _replace(partial, out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return written
