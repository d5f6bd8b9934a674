"""The timeline: the same points in every era of a run, against the eras' dates.

Three tables, each judged like every other comparison (statistics.judge: Welch's t over the
processes, the same minimum effect):

- ``medians``: each era's figure per framework, mode and point, with Student's t interval over
  its processes, beside the era's date (envs/eras.yaml);
- ``framework_ratios``: the PyTorch / TensorFlow ratio per point in each era, with its verdict;
- ``speedups``: what got faster: per framework, mode and point, the newest era's time / the
  oldest's, with its interval and verdict (< 1: faster today);
- ``generation_ratios``: task generation's PyTorch / TensorFlow time to first token and time
  per output token in each era (verdicts/generation.py), beside the era's date.

``claims`` holds this machine's findings against what the studies published
(tables/published_claims.py), era by era.
"""
import numpy as np
import pandas as pd

from duel.cell import contract, frameworks

from duel.host.stacks import as_of, eras
from duel.host.tables import published_claims, replicates, scopes
from duel.host.verdicts import generation, pairs, statistics

KEYS = [key for key in scopes.SCOPE if key != "era"] + scopes.COMPARED + scopes.MODEL_INPUT


def _dated(table):
    known = eras.registry()
    table.insert(1, "era_date", [known[era].date if era in known else None
                                 for era in table["era"]])
    return table


def in_era_order(table):
    order = eras.in_time_order(table["era"].unique()) if len(table) else []
    table = table.copy()
    table["era_order"] = [order.index(era) for era in table["era"]]
    return table.sort_values(["era_order"] + [key for key in KEYS if key in table.columns],
                             kind="stable").drop(columns="era_order").reset_index(drop=True)


MEDIAN_COLUMNS = ["era", "era_date", "framework_version"] + KEYS + [
    "status", "figure_ms", "low_ms", "high_ms", "processes"]


def medians(frame):
    """Each era's figure per point, with its interval over processes (none with one)."""
    table = scopes.prepared(frame)
    rows = []
    for _, row in table.iterrows():
        figures = row["replicate_figures"] if row["status"] == "ok" else None
        interval = statistics.figure_interval(figures) if figures is not None and \
            len(figures) else None
        rows.append(dict(
            [(key, row[key]) for key in ["era", "framework_version"] + KEYS],
            status=row["status"], figure_ms=row["reported_ms"],
            low_ms=interval[0] if interval else None, high_ms=interval[1] if interval else None,
            processes=int(row["replicates"] or 0)))
    if not rows:
        return pd.DataFrame(columns=MEDIAN_COLUMNS)
    return _dated(in_era_order(pd.DataFrame(rows)))[MEDIAN_COLUMNS]


def framework_ratios(frame, min_effect, ratios=None):
    """The PyTorch / TensorFlow ratio of every point in every era, with its verdict
    (``ratios``: statistics.point_ratios of ``frame``, where made already)."""
    if ratios is None:
        ratios = statistics.point_ratios(frame, min_effect=min_effect)
    if ratios.empty:
        return ratios
    return _dated(in_era_order(ratios))


SPEEDUP_COLUMNS = ["era_new", "era_old", "version_new", "version_old"] + KEYS + [
    "new_ms", "old_ms", "ratio", "ci_low", "ci_high", "clear", "decision", "verdict"]


def speedups(frame, min_effect):
    """Per framework, mode and point: newest era's time / oldest era's (pairs.cross_era; < 1:
    faster today), judged as every comparison is."""
    paired = pairs.cross_era(scopes.prepared(frame), pairs.JUDGED, newest_only=True)
    rows = []
    for _, pair in paired.iterrows():
        judged = statistics.judge(pairs.side(pair, "_new"), pairs.side(pair, "_old"),
                                  contract.reported_statistic(pair["method"]), min_effect,
                                  "faster today", "slower today")
        rows.append(dict([(key, pair[key]) for key in KEYS], era_new=pair["era_new"],
                         era_old=pair["era_old"], version_new=pair["framework_version_new"],
                         version_old=pair["framework_version_old"],
                         new_ms=pair["reported_ms_new"], old_ms=pair["reported_ms_old"],
                         ratio=judged.ratio, ci_low=judged.ci_low, ci_high=judged.ci_high,
                         clear=statistics.CLEAR_WORDS[judged.clear],
                         decision=judged.decision,
                         verdict=judged.verdict or "not ok in an era"))
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)


GENERATION_COLUMNS = ["era", "era_date", "versions"] + [
    key for key in generation.COLUMNS if key != "era"]


def generation_ratios(verdict, frame):
    """Task generation's verdict (``verdict``: generation.generation_verdict of the run's long
    table) per era, oldest first: PyTorch / TensorFlow time to first token and time per output
    token per pair of modes, each with its interval and decision, and the versions of the era's
    frameworks in ``frame``."""
    if verdict.empty:
        return pd.DataFrame(columns=GENERATION_COLUMNS)
    verdict = verdict.copy()
    verdict["versions"] = [_versions(frame, era) for era in verdict["era"]]
    return _dated(in_era_order(verdict))[GENERATION_COLUMNS]


def _versions(frame, era):
    """The frameworks' and transformers' versions of ``era``'s rows in this run, in words."""
    rows = frame[frame["era"] == era]
    names = dict(as_of.LABELLED)  # a package's name in words
    words = ["%s %s" % (names[frameworks.package(framework)], ", ".join(sorted(set(
        rows.loc[rows["framework"] == framework, "framework_version"].dropna()))))
             for framework in frameworks.NAMES if (rows["framework"] == framework).any()]
    if "transformers_version" in rows.columns and rows["transformers_version"].notna().any():
        words.append("transformers %s" % ", ".join(sorted(set(
            rows["transformers_version"].dropna()))))
    return ", ".join(words)


CLAIM_COLUMNS = ["source", "era", "claim", "published", "this_machine", "finding", "differs",
                 "hardware_then", "hardware_here"]


def _geomean(values):
    values = np.asarray([float(value) for value in values if value is not None and
                         not pd.isna(value)])
    return float(np.exp(np.log(values).mean())) if values.size else None


def claims(frame, min_effect, ratios=None):
    """Each published claim beside what this run finds in the same era, task and device: a
    claim of no era (tables/published_claims.py) is held in every era of the run that ran its
    task, or said to be not measured where none did (``ratios``: statistics.point_ratios of
    ``frame``, where made already)."""
    table = scopes.prepared(frame)
    if ratios is None and len(table):
        ratios = statistics.point_ratios(frame, min_effect=min_effect)
    hardware_here = "; ".join(sorted(set(
        "%s, %s threads" % (replicates.machine(row), row["threads"])
        for _, row in table[table["device"] == "cpu"].iterrows()))) if len(table) else ""
    rows = []
    for claim in published_claims.CLAIMS:
        held = [claim.era] if claim.era else eras.in_time_order(
            table.loc[table["task"] == claim.task, "era"].unique()) if len(table) else []
        for era in held or [None]:
            found = _finding(claim, era, table, ratios, min_effect)
            rows.append(dict(source=claim.source, era=era, claim=claim.claim,
                             published=claim.published, this_machine=found[0],
                             finding=found[1], differs=_differs(claim, table, era),
                             hardware_then=claim.hardware, hardware_here=hardware_here))
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def _differs(claim, table, era):
    """What differs between the study's measurement and this run's, in words."""
    words = ["device: a GPU there, a CPU here" if claim.device == "cuda" else
             "device: a CPU in both, not the same machine"]
    here = _versions(table, era) if era else ""
    words.append("versions: %s there, %s here" % (claim.versions, here or "none measured"))
    return "; ".join(words)


def _finding(claim, era, table, ratios, min_effect):
    """(what this run measured in ``era``, whether it agrees) for one claim; "not measured"
    where this run has no ok points of the claim's modes and task there. A mode's speed-up over
    eager is a geometric mean over points, which has no interval (statistics.geomean_interval
    pairs the frameworks' processes): the judge is asked with the mean as its own interval, so
    it is clear where it lies beyond min_effect."""
    if claim.kind == "frameworks":
        missing = ("PyTorch %s vs TensorFlow %s (task %s) in era %s: not measured in this run"
                   % (claim.modes + (claim.task, era)), "n/a")
        if era is None or ratios is None or ratios.empty:
            return missing
        chosen = ratios[(ratios["era"] == era) & (ratios["device"] == "cpu")
                        & (ratios["task"] == claim.task)
                        & (ratios["mode_pt"] == claim.modes[0])
                        & (ratios["mode_tf"] == claim.modes[1]) & ratios["ratio"].notna()]
        if claim.models:
            chosen = chosen[chosen["model"].isin(claim.models)]
        if chosen.empty:
            return missing
        geomean = _geomean(chosen["ratio"])
        pt, tf = ((chosen["verdict"] == name).sum() for name in
                  ("PyTorch faster", "TensorFlow faster"))
        found = statistics.decisions(chosen)
        text = ("PyTorch %s / TensorFlow %s, geometric mean %.2f over %d points (%s); "
                "PyTorch clearly faster at %d, TensorFlow at %d, equivalent at %d, undecided "
                "at %d" % (claim.modes[0], claim.modes[1], geomean, len(chosen),
                           ", ".join(sorted(chosen["model"].unique())), pt, tf,
                           found.count(statistics.EQUIVALENT), found.count(statistics.UNDECIDED)))
        pytorch = pt > tf and geomean < 1
        tensorflow = tf > pt and geomean > 1
        if not (pytorch or tensorflow):
            return text, "not clear"
        return text, "agrees" if pytorch == (claim.faster == "pytorch") else "disagrees"
    # kind "modes": a graph mode's speed-up over eager, same framework, era and task
    framework, mode = claim.modes
    missing = ("%s %s and eager (task %s) in era %s: not measured in this run"
               % (framework, mode, claim.task, era), "n/a")
    if era is None or not len(table):
        return missing
    chosen = table[(table["era"] == era) & (table["device"] == "cpu")
                   & (table["task"] == claim.task)
                   & (table["framework"] == framework) & table["mode"].isin(["eager", mode])]
    paired = pairs.mode_speedups(chosen)
    if len(paired):
        paired = paired[(paired["status_eager"] == "ok") & (paired["status_%s" % mode] == "ok")]
    if paired.empty:
        return missing
    speedup = _geomean(paired["ratio"])
    text = ("%s %s over eager: geometric-mean speed-up %.2fx (largest %.2fx) over %d points (%s)"
            % (framework, mode, speedup, float(paired["ratio"].astype(float).max()), len(paired),
               ", ".join(sorted(paired["model"].unique()))))
    clear, agrees = statistics.verdict(speedup, speedup, speedup, min_effect, "disagrees",
                                       "agrees")
    return text, agrees if clear else "not clear"
