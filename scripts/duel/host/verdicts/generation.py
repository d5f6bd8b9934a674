"""The verdict of task generation, in a user's units: per PyTorch/TensorFlow pair of modes, the
ratio of time to first token and of time per output token with their 95% intervals, tokens per
second side by side, and whether the tokens agree.

Each ratio is judged as every ratio is (statistics.judge): per point, from each process's
figure (Welch's t over processes, a bootstrap of the samples within one); per pair of modes, the
geometric mean over its points with the whole-process bootstrap (statistics.geomean_interval).
A process's time to first token is the median of its one-token calls; its time per output
token, each whole call less that median, over the tokens after the first (timing.generation_split).
Its tables are two-sided, of the pair the run's views show (pairs.SHOWN).
"""
import numpy as np
import pandas as pd

from duel.host.tables import replicates, scopes
from duel.host.verdicts import pairs, statistics

TASK = "generation"
# The two times judged: (name, what it is called on a line).
FIGURES = (("first_token", "time to first token"), ("per_token", "time per output token"))
POINT_KEYS = scopes.SCOPE + ["framework", "mode", "model", "batch_size", "seq_len"]
COLUMNS = pairs.SHOWN.keys + [
    "points", "replicates", "interval",
    "first_token_ratio", "first_token_low", "first_token_high", "first_token_decision",
    "per_token_ratio", "per_token_low", "per_token_high", "per_token_decision",
    "tokens_per_s_pt", "tokens_per_s_tf", "tokens_agree", "tokens_near_tie", "tokens_differ"]


def _process_samples(row):
    """{figure: the samples of one process} of a generation row: its one-token calls, and each
    whole call less their median over the tokens after the first."""
    first = [float(value) for value in row["first_token_samples"]]
    middle = float(np.median(first))
    steps = int(row["new_tokens"]) - 1
    return {"first_token": first,
            "per_token": [(float(value) - middle) / steps for value in row["samples"]]}


def generation_points(frame):
    """One row per generation point and framework mode, from the long table's counted rows:
    its status (the worst of its processes'), each figure's per-process samples and figure,
    tokens per second, the fewest tokens that agreed, and its processes."""
    frame = replicates.counted(frame)
    frame = frame[frame["task"] == TASK]
    records = []
    for key, group in frame.groupby(POINT_KEYS, sort=False, dropna=False):
        record = dict(zip(POINT_KEYS, key))
        statuses = set(group["status"])
        record["status"] = "ok" if statuses == {"ok"} else next(
            status for status in replicates.STATUS_SEVERITY if status in statuses)
        record["replicates"] = len(group)
        if record["status"] == "ok" and (group["new_tokens"] > 1).all():
            processes = [_process_samples(row) for _, row in group.iterrows()]
            for name, _ in FIGURES:
                record[name + "_samples"] = [process[name] for process in processes]
                record[name + "_ms"] = float(np.median([np.median(process[name])
                                                        for process in processes]))
                record[name + "_figures"] = [float(np.median(process[name]))
                                             for process in processes]
            record["tokens_per_s"] = float(np.median(group["tokens_per_s"].astype(float)))
        record["tokens"] = _tokens(group)
        records.append(record)
    return pd.DataFrame.from_records(records)


def _tokens(group):
    """How a point's tokens compare with PyTorch eager's over its processes: 'differ' (beyond
    the rule: the point is an error), 'near-tie' (a first divergence where the reference's top
    two logits were within rounding), 'agree' (every token), or None where none was checked."""
    checked = group[group["tokens_agree"].notna() & group["new_tokens"].notna()]
    if checked.empty:
        return None
    if checked["message"].fillna("").str.startswith("generated tokens differ").any():
        return "differ"
    if (checked["tokens_agree"] < checked["new_tokens"]).any():
        return "near-tie"
    return "agree"


def _side(point, name):
    if point is None or point["status"] != "ok":
        return pairs.Side(None if point is None else point["status"], None, 0, None)
    samples = point[name + "_samples"]
    return pairs.Side("ok", point[name + "_ms"], min(len(value) for value in samples), samples)


def _geomean(judged, name):
    """The geometric-mean ratio of ``name`` over the judged points of a pair, with the whole-
    process bootstrap where every side has several processes; (ratio, low, high)."""
    ratios = [record[name].ratio for record in judged if record[name].ratio]
    if not ratios:
        return None, None, None
    paired = pd.DataFrame([{
        "model": record["model"],
        "replicate_figures_pt": record["pt"][name + "_figures"],
        "replicate_figures_tf": record["tf"][name + "_figures"],
        "replicate_samples_pt": record["pt"][name + "_samples"],
        "replicate_samples_tf": record["tf"][name + "_samples"]} for record in judged
        if record[name].ratio])
    low, high = statistics.geomean_interval(paired, "median")
    return float(np.exp(np.mean(np.log(ratios)))), low, high


# A point's tokens, best first (_tokens); a pair of points takes its worse side's.
TOKEN_WORDS = ("agree", "near-tie", "differ")


def _worse(*words):
    known = [word for word in words if word in TOKEN_WORDS]
    return max(known, key=TOKEN_WORDS.index) if known else None


def _geomean_of(values):
    values = [float(value) for value in values if value is not None and not pd.isna(value)]
    return float(np.exp(np.mean(np.log(values)))) if values else None


def _judged_pairs(points, min_effect):
    """Per scope and pair of modes of ``points`` (generation_points): (scope, mode_pt, mode_tf,
    a record per PyTorch point: its model, both sides' points and each figure's judgement)."""
    top, bottom = pairs.SHOWN.frameworks
    keys = scopes.SCOPE + ["model", "batch_size", "seq_len"]
    for scope, group in points.groupby(scopes.SCOPE, sort=False, dropna=False):
        sides = [group[group["framework"] == framework] for framework in (top, bottom)]
        for mode_pt in sides[0]["mode"].drop_duplicates():
            for mode_tf in sides[1]["mode"].drop_duplicates():
                left = sides[0][sides[0]["mode"] == mode_pt]
                right = sides[1][sides[1]["mode"] == mode_tf].set_index(keys)
                judged = []
                for _, point in left.iterrows():
                    index = tuple(point[key] for key in keys)
                    other = right.loc[index] if index in right.index else None
                    record = {"model": point["model"], "pt": point, "tf": other}
                    for name, _ in FIGURES:
                        record[name] = statistics.judge(
                            _side(point, name), _side(other, name), "median", min_effect,
                            *pairs.SHOWN.faster())
                    judged.append(record)
                yield scope, mode_pt, mode_tf, judged


RATIO_COLUMNS = scopes.SCOPE + ["mode_pt", "mode_tf", "model", "batch_size", "seq_len",
                                "figure", "ratio", "ci_low", "ci_high", "decision", "status_pt",
                                "status_tf"]


def point_ratios(frame, min_effect=statistics.MIN_EFFECT):
    """A row per generation point of PyTorch, mode of TensorFlow and figure (FIGURES' names):
    the ratio PyTorch / TensorFlow, its 95% interval and decision (statistics.judge), and each
    side's status (None: TensorFlow has no such point). What the generation charts draw."""
    points = generation_points(frame)
    if points.empty:
        return pd.DataFrame(columns=RATIO_COLUMNS)
    rows = []
    for scope, mode_pt, mode_tf, judged in _judged_pairs(points, min_effect):
        for record in judged:
            point = record["pt"]
            for name, _ in FIGURES:
                found = record[name]
                rows.append(dict(zip(scopes.SCOPE, scope), mode_pt=mode_pt, mode_tf=mode_tf,
                                 model=point["model"], batch_size=point["batch_size"],
                                 seq_len=point["seq_len"], figure=name, ratio=found.ratio,
                                 ci_low=found.ci_low, ci_high=found.ci_high,
                                 decision=found.decision, status_pt=point["status"],
                                 status_tf=None if record["tf"] is None
                                 else record["tf"]["status"]))
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)


def generation_verdict(frame, min_effect=statistics.MIN_EFFECT):
    """Per scope and pair of modes (pairs.SHOWN.keys) of task generation, COLUMNS: the points
    paired, the fewest processes a side, the interval's kind, each figure's geometric-mean ratio
    (PyTorch / TensorFlow), its interval and the decision of the ratio so judged, tokens per
    second of each side (geometric means), and the paired points whose tokens, checked on both
    sides, on the worse side all agreed with PyTorch eager's, first diverged at a near-tie, or
    differed."""
    points = generation_points(frame)
    if points.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for scope, mode_pt, mode_tf, judged in _judged_pairs(points, min_effect):
        both = [record for record in judged if record["tf"] is not None
                and record["pt"]["status"] == "ok" and record["tf"]["status"] == "ok"]
        row = dict(zip(scopes.SCOPE, scope))
        row.update(mode_pt=mode_pt, mode_tf=mode_tf, points=len(both))
        row["replicates"] = min([int(record[side]["replicates"]) for record in both
                                 for side in ("pt", "tf")] or [0])
        row["interval"] = statistics.interval_kind(row["replicates"], row["replicates"])
        for name, _ in FIGURES:
            ratio, low, high = _geomean(both, name)
            row[name + "_ratio"], row[name + "_low"], row[name + "_high"] = ratio, low, high
            row[name + "_decision"] = (
                statistics.decided(ratio, low, high, min_effect, *pairs.SHOWN.faster())[1]
                if low is not None else None)
        for side, suffix in (("pt", "_pt"), ("tf", "_tf")):
            row["tokens_per_s" + suffix] = _geomean_of(
                [record[side]["tokens_per_s"] for record in both])
        for word in TOKEN_WORDS:
            row["tokens_" + word.replace("-", "_")] = sum(
                1 for record in judged if record["tf"] is not None
                and {record["pt"]["tokens"], record["tf"]["tokens"]} <= set(TOKEN_WORDS)
                and _worse(record["pt"]["tokens"], record["tf"]["tokens"]) == word)
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def ratio_text(row, name, suffix=""):
    """A figure's ratio of a verdict row, its interval and decision: '0.09 [0.08, 0.09] PyTorch
    faster' (``suffix``: of the columns name_ratio + suffix, ...)."""
    ratio = row[name + "_ratio" + suffix]
    if ratio is None or pd.isna(ratio):
        return "n/a"
    text = "%.2f" % ratio
    low = row[name + "_low" + suffix]
    if low is not None and not pd.isna(low):
        text += " [%.2f, %.2f] %s" % (low, row[name + "_high" + suffix],
                                      row[name + "_decision" + suffix])
    return text


def lines(verdict):
    """The generation verdict's lines for the end of a run (``verdict``: generation_verdict's
    table, or the CSV of it); none without generation points."""
    if verdict is None or not len(verdict):
        return []
    text = ["Generation (PyTorch / TensorFlow; < 1: PyTorch faster):"]
    for _, row in verdict.iterrows():
        scope = " ".join(str(row[key]) for key in scopes.SCOPE)
        text.append("  PyTorch %s vs TensorFlow %s (%s), %d points, %d processes per cell (%s):"
                    % (row["mode_pt"], row["mode_tf"], scope, row["points"], row["replicates"],
                       row["interval"]))
        if not row["points"]:
            text.append("    no point ran on both sides: no verdict")
            continue
        for name, words in FIGURES:
            text.append("    %s: %s" % (words, ratio_text(row, name)))
        rates = [row["tokens_per_s" + suffix] for suffix in ("_pt", "_tf")]
        text.append("    tokens per second: PyTorch %s, TensorFlow %s" % tuple(
            "%.1f" % rate if rate is not None and not pd.isna(rate) else "n/a"
            for rate in rates))
        counts = [int(row["tokens_" + word.replace("-", "_")]) for word in TOKEN_WORDS]
        text.append("    tokens against PyTorch eager's: the same at %d points, first diverging "
                    "at a near-tie of its logits at %d, %s" % (
                        counts[0], counts[1], "differing at none" if not counts[2] else
                        "DIFFERING at %d (errors: a wrong text is not a faster one)"
                        % counts[2]))
    return text
