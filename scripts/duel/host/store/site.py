"""The results store published as a static site: plain files that open from file:// and from any
static host (as ``asv publish`` makes one), written by ``duel publish``. That is its one job.

Pages, every link relative:

    index.html                 every run, newest first: when, machine, eras, commit, points,
                               the headline recorded when it was added; links to the pages below
    scope/<scope>.html         per scope (era, device, precision, task, method): the PyTorch /
                               TensorFlow verdict of each run per pair of modes (geometric-mean
                               ratio, points each framework clearly wins, equivalent, undecided:
                               statistics.pair_summary)
                               in a table, and the ratio over the runs in a chart; in a
                               scope of task generation also each run's generation verdict
                               (time to first token, per output token, tokens per second,
                               tokens agreed) and the latest run's generation chart
    model/<model>.html         per model, machine and scope: a trend chart (one axes per batch x
                               length point, a line per framework and mode, the run's figure
                               against its start time, its interval as a band) and the latest
                               figures in a table
    machines.html              where runs differ only by machine: the latest run of each machine,
                               side by side per point
    bisections.html            each bisection's answer (duel bisect): where the point stepped,
                               the releases measured in a table and against their day in a chart

Why no JavaScript: nothing to audit or to fetch from a CDN, and a page opened from file:// shows
all of it. The charts are SVG files beside the pages (site_charts).

Why verdicts for the latest runs only: judging a run takes its samples (judging), so the latest
VERDICT_RUNS runs are judged and every page says how many that is. The trend charts and tables
cover every run, from the store's per-run figures (questions.history). The folder keeps what
publish did not write (site_folder).
"""
import datetime
import os
import re
import shutil

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402

from duel.host.render import bisection, pages  # noqa: E402
from duel.host.render.plots import base, text_generation  # noqa: E402
from duel.host.render.pages import link, table, text  # noqa: E402
from duel.host.store import archive, judging, questions, site_charts, site_folder  # noqa: E402
from duel.host.store.site_charts import said_noisy, scope_label  # noqa: E402
from duel.host.tables import breakdown, scopes  # noqa: E402
from duel.host.verdicts import generation, statistics  # noqa: E402

VERDICT_RUNS = 200
MACHINE_GROUPS = 3  # groups of runs differing only by machine shown, latest first
RUN_COLUMNS = ["run_id", "started_at", "status", "machine", "eras", "devices", "git_commit",
               "lock_sha256", "points", "processes", "headline"] + questions.NOISE_COLUMNS
SAME_RUN = ["eras", "devices", "git_commit", "lock_sha256"]  # runs alike but for the machine
UNNAMED = "unnamed-machine"  # a run that recorded neither a machine nor a hostname
SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _page(template, title, depth=None, **values):
    """A whole page from templates/site/``template``: a link home (``depth`` folders below the
    index; None: the index), the title, ``values``."""
    return pages.render("site/" + template, title=title,
                        home="../" * depth + "index.html" if depth is not None else None,
                        noisy_meaning=breakdown.NOISY_MEANING, **values)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _name(*parts):
    """A file name from config names (which hold only letters, digits, '.', '_', '-')."""
    return "_".join(SAFE.sub("-", str(part)) for part in parts)


def _short(commit):
    return "" if commit is None or pd.isna(commit) else str(commit)[:10]


def _when(started):
    """'2026-12-03 08:15 UTC' from a run's ISO start time (or a column of them)."""
    stamps = pd.to_datetime(pd.Series(started), utc=True, errors="coerce", format="ISO8601")
    text = stamps.dt.strftime("%Y-%m-%d %H:%M UTC").fillna("")
    return text if isinstance(started, pd.Series) else text.iloc[0]


def _rates(row):
    return " / ".join("" if pd.isna(row["tokens_per_s" + suffix]) else
                      "%.1f" % row["tokens_per_s" + suffix] for suffix in ("_pt", "_tf"))


def generation_sections(out, scope, by_run, found):
    """A scope's generation verdicts (``found``: judging.generation_verdicts' pair) for its
    page: the latest judged run's chart (text_generation.generation_figure) and, per pair of
    modes, each run's verdict, newest first; (chart or None, sections)."""
    verdicts, ratios = (table[np.logical_and.reduce(
        [table[name] == value for name, value in zip(scopes.SCOPE, scope)])]
        if len(table) else table for table in found)
    if verdicts.empty:
        return None, []
    verdicts = verdicts.assign(started_at=verdicts["run_id"].map(by_run["started_at"]))
    verdicts = verdicts.sort_values(["started_at", "run_id"], ascending=False)
    latest = verdicts["run_id"].iloc[0]
    run = by_run.loc[latest]
    chart = "%s-generation.svg" % _name(*scope)
    with plt.rc_context(base.STYLE):
        figure = text_generation.generation_figure(
            ratios[ratios["run_id"] == latest],
            "the latest judged run, %s (%s, %s)" % (latest, run["when"], run["machine"]))
    site_charts.save(figure, os.path.join(out, "scope", chart))
    sections = []
    for (mode_pt, mode_tf), pair in verdicts.groupby(["mode_pt", "mode_tf"], sort=True):
        rows = []
        for _, row in pair.sort_values(["started_at", "run_id"], ascending=False).iterrows():
            run = by_run.loc[row["run_id"]]
            rows.append([run["when"], row["run_id"], run["machine"], _short(run["git_commit"])]
                        + [generation.ratio_text(row, name) for name, _ in generation.FIGURES]
                        + [_rates(row)] + [row["tokens_" + word.replace("-", "_")]
                                           for word in generation.TOKEN_WORDS]
                        + [row["points"], row["replicates"]])
        sections.append(dict(mode_pt=mode_pt, mode_tf=mode_tf, table=table(
            ["started", "run", "machine", "commit"] + [words for _, words in generation.FIGURES]
            + ["tokens per second PyTorch / TensorFlow", "tokens agree", "first diverging at "
               "a near-tie", "tokens differ", "points", "processes"], rows,
            wrap=[words for _, words in generation.FIGURES])))
    return chart, sections


def _latest_table(series):
    """Per point and framework/mode: the latest run's figure and interval, the first run's,
    and how many runs measured it or failed it."""
    rows = []
    for key, line in series.groupby(["batch_size", "seq_len", "framework", "mode"], sort=True):
        ok = line[line["status"] == "ok"]
        last = ok.iloc[-1] if len(ok) else None
        first = ok.iloc[0] if len(ok) else None
        rows.append(["%dx%d" % key[:2], scopes.series_label(*key[2:]),
                     None if last is None else last["figure_ms"],
                     None if last is None else last["low_ms"],
                     None if last is None else last["high_ms"],
                     None if first is None else first["figure_ms"],
                     int(len(ok)), int(len(line) - len(ok)),
                     _when(last["started_at"]) if last is not None else None])
    return table(["point", "framework mode", "latest ms", "low", "high", "first ms", "runs",
                  "failed runs", "latest run"], rows)


def model_pages(out, history):
    """A page per model; returns {model: its page, relative to ``out``}."""
    written = {}
    for model, rows in history.groupby("model", sort=True):
        sections = []
        for (machine, *scope), series in rows.groupby(["machine"] + scopes.SCOPE, sort=True):
            series = series.sort_values(["started_at", "run_id"])
            chart = "%s.svg" % _name(model, machine, *scope)
            with plt.rc_context(base.STYLE):
                figure = site_charts.trend_figure(series, model, machine, scope)
            site_charts.save(figure, os.path.join(out, "model", chart))
            sections.append(dict(scope=scope_label(scope), machine=machine, chart=chart,
                                 table=_latest_table(series)))
        page = os.path.join("model", "%s.html" % _name(model))
        _write(os.path.join(out, page), _page("model.html", "%s over the runs" % model, 1,
                                              model=model, sections=sections))
        written[model] = page
    return written


def ratio_class(row):
    """A run's geometric-mean cell: coloured only where the judge finds that it clearly favours
    a framework (not where the ratio is merely below or above 1)."""
    winner = statistics.geomean_winner(row, statistics.MIN_EFFECT)
    return pages.verdict_class(winner) if winner else ""


def scope_pages(out, runs, verdicts, scopes_found, judged, generated=None):
    """A page per scope: per pair of modes, each judged run's verdict, newest first, and its
    generation verdicts where it has them (``generated``: judging.generation_verdicts' pair);
    returns {scope values: its page}."""
    written = {}
    by_run = runs.set_index("run_id")
    for scope in scopes_found:
        page = os.path.join("scope", "%s.html" % _name(*scope))
        chart, sections = None, []
        mine = verdicts
        if len(verdicts):
            mine = verdicts[np.logical_and.reduce(
                [verdicts[name] == value for name, value in zip(scopes.SCOPE, scope)])]
        if mine.empty:
            mine = pd.DataFrame(columns=["mode_pt", "mode_tf"])
        else:
            chart = "%s.svg" % _name(*scope)
            with plt.rc_context(base.STYLE):
                figure = site_charts.verdict_figure(mine, by_run, scope)
            site_charts.save(figure, os.path.join(out, "scope", chart))
        for (mode_pt, mode_tf), pair in mine.groupby(["mode_pt", "mode_tf"], sort=True):
            pair = pair.assign(started_at=pair["run_id"].map(by_run["started_at"]))
            pair = pair.sort_values(["started_at", "run_id"], ascending=False)
            rows, classes = [], []
            for _, row in pair.iterrows():
                run = by_run.loc[row["run_id"]]
                noisy = said_noisy([run["noisy"]])[0]
                rows.append([run["when"], pages.anchor("run-%s" % row["run_id"], row["run_id"],
                                                       ", noisy" if noisy else ""),
                             run["machine"], _short(run["git_commit"])] + [row[name] for name in (
                        "geomean_ratio", "pytorch_clearly_faster", "tensorflow_clearly_faster",
                        "equivalent", "undecided", "compared", "points", "replicates",
                        "interval")])
                classes.append(["", "noisy" if noisy else "", "", ""] + [ratio_class(row)]
                               + [""] * 8)
            sections.append(dict(mode_pt=mode_pt, mode_tf=mode_tf, table=table(
                ["started", "run", "machine", "commit", "geomean ratio", "PyTorch faster",
                 "TensorFlow faster", "equivalent", "undecided", "compared", "points",
                 "processes", "interval"], rows, classes)))
        generation_chart, generation_pairs = generation_sections(
            out, scope, by_run, generated) if generated is not None else (None, [])
        _write(os.path.join(out, page), _page(
            "scope.html", "Verdicts in %s" % scope_label(scope), 1,
            method=statistics.method_text(), judged=judged, chart=chart,
            scope=scope_label(scope), pairs=sections, generation_chart=generation_chart,
            generation_pairs=generation_pairs))
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
    alike = []
    for group in groups:
        machines = list(group["machine"])
        first = group.iloc[0]
        tables = []
        rows = history[history["run_id"].isin(group["run_id"])]
        for scope, scoped in rows.groupby(scopes.SCOPE, sort=True):
            index = ["model", "framework", "mode", "batch_size", "seq_len"]
            lines = []
            for key, point in scoped.groupby(index, sort=True):
                by_machine = dict(zip(point["machine"], point.to_dict("records")))
                cells = [key[0], scopes.series_label(key[1], key[2]), "%dx%d" % key[3:]]
                figures = []
                for machine in machines:
                    row = by_machine.get(machine)
                    ok = row is not None and row["status"] == "ok"
                    figures.append(row["figure_ms"] if ok else None)
                    if row is None:
                        cells.append("")
                    elif not ok:
                        cells.append(row["status"])
                    elif pd.isna(row["low_ms"]):
                        cells.append(row["figure_ms"])
                    else:
                        cells.append("%s [%s, %s]" % tuple(
                            text(row[name]) for name in ("figure_ms", "low_ms", "high_ms")))
                cells += [None if figure is None or figures[0] is None else figure / figures[0]
                          for figure in figures[1:]]
                lines.append(cells)
            tables.append((scope_label(scope), table(
                ["model", "framework mode", "point"] + machines
                + ["%s / %s" % (machine, machines[0]) for machine in machines[1:]], lines)))
        alike.append(dict(
            eras=first["eras"], devices=first["devices"],
            commit=_short(first["git_commit"]) or "not recorded",
            runs=[(machine, run_id, _when(started)) for machine, run_id, started
                  in zip(group["machine"], group["run_id"], group["started_at"])],
            tables=tables))
    _write(os.path.join(out, "machines.html"),
           _page("machines.html", "The same runs on different machines", 0,
                 shown=MACHINE_GROUPS, groups=alike))
    return "machines.html"


def bisections_page(out, answers):
    """bisections.html: each stored bisection's answer, its table and its chart; its path, or
    None where the store holds none."""
    if not answers:
        return None
    records = []
    for record in answers:
        chart = os.path.join("bisections", "%s.svg" % _name(record["name"]))
        said = bisection.lines(record)
        if any(one["status"] == "measured" for one in record["releases"]):
            bisection.chart(record, os.path.join(out, chart))
        else:
            chart = None
        frame = bisection.table(record)
        records.append(dict(name=record["name"], title=said[0], said="\n".join(said[1:]),
                            chart=chart, table=table(list(frame.columns), [
                                list(row) for row in frame.itertuples(index=False)])))
    _write(os.path.join(out, "bisections.html"),
           _page("bisections.html", "Bisections", 0, records=records))
    return "bisections.html"


def index_page(out, runs, scope_links, model_links, machines_link, judged, verdicts, failed,
               bisections_link=None):
    """index.html: every run, newest first, and links to every other page."""
    judged_runs = set(verdicts["run_id"]) if len(verdicts) else set()
    rows, classes = [], []
    for _, run in runs.iloc[::-1].iterrows():
        links = ""
        if run["run_id"] in judged_runs:
            mine = verdicts[verdicts["run_id"] == run["run_id"]]
            found = sorted(set(map(tuple, mine[scopes.SCOPE].to_numpy())))
            links = pages.lines([link("%s#run-%s" % (scope_links[scope], run["run_id"]),
                                      scope_label(scope))
                                 for scope in found if scope in scope_links])
        elif run["run_id"] in failed:
            links = "no verdict: %s" % failed[run["run_id"]]
        rows.append([run["when"], run["run_id"], run["machine"], run["eras"], run["devices"],
                     _short(run["git_commit"]), run["points"], run["processes"],
                     questions.status_text(run), run["headline"], links])
        classes.append([""] * 8 + ["noisy" if questions.noise_text(run) else ""] + [""] * 2)
    _write(os.path.join(out, "index.html"), _page(
        "index.html", "Duel: PyTorch vs TensorFlow, %d run%s" % (
            len(runs), "" if len(runs) == 1 else "s"),
        scope_links=[(page, scope_label(scope)) for scope, page in sorted(scope_links.items())],
        model_links=[(page, model) for model, page in sorted(model_links.items())],
        machines_link=machines_link, bisections_link=bisections_link, judged=judged,
        published=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        runs=table(["started", "run", "machine", "eras", "devices", "commit", "points",
                    "processes", "status", "headline", "verdicts"], rows, classes,
                   wrap=("status", "headline", "verdicts"))))


def publish(store, out, verdict_runs=VERDICT_RUNS):
    """Write the site of ``store`` to the folder ``out`` (its own files replaced, others kept);
    the files written, relative to it."""
    archive.version(store)
    if not archive.run_ids(store):
        raise archive.StoreError("%s holds no run yet: nothing to publish (duel store add adds "
                                 "a results folder's runs)" % store)
    partial = site_folder.fresh_folder(out)
    try:
        runs = archive.query(store, "SELECT %s FROM runs ORDER BY started_at, run_id"
                             % ", ".join(RUN_COLUMNS), views=("runs",))
        runs["when"] = _when(runs["started_at"])
        runs["machine"] = runs["machine"].fillna(UNNAMED)
        latest = list(runs["run_id"].iloc[-verdict_runs:]) if verdict_runs else []
        judge = judging.start_judging(store, latest)
        history = questions.history(store, ())
        history["machine"] = history["machine"].fillna(UNNAMED)
        model_links = model_pages(partial, history)
        verdicts, failed = judge()
        judged = ("Verdicts judged for every run (%d)." % len(runs) if len(latest) == len(runs)
                  else "Verdicts judged for the latest %d of %d runs (each run's samples are "
                       "read to judge it); the trend charts cover every run."
                  % (len(latest), len(runs)))
        scopes_found = sorted(set(map(tuple, history[scopes.SCOPE].to_numpy()))
                              | (set(map(tuple, verdicts[scopes.SCOPE].to_numpy()))
                                 if len(verdicts) else set()))
        scope_links = scope_pages(partial, runs, verdicts, scopes_found, judged,
                                  judging.generation_verdicts(store, latest))
        groups = machine_groups(runs)
        machines_link = machines_page(partial, groups, history) if groups else None
        index_page(partial, runs, scope_links, model_links, machines_link, judged, verdicts,
                   failed, bisections_page(partial, archive.bisections(store)))
        written = sorted(os.path.relpath(os.path.join(folder, name), partial)
                         for folder, _, names in os.walk(partial) for name in names)
        site_folder.replace(partial, out, written)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return written
