"""The verdicts of a store's runs, each run judged once (duel publish).

Judging a run takes its samples and tens of milliseconds, so a store of a thousand runs would take
minutes: the site judges only its latest runs, reading only the columns a verdict needs, in
other processes while its own draws the trends (start_judging); their generation verdicts here
(generation_verdicts: a run's generation points are few).
"""
import multiprocessing
import os
from concurrent import futures

import pandas as pd

from duel.cell import contract

from duel.host.store import archive
from duel.host.tables import summary
from duel.host.verdicts import generation, pairs, statistics

JUDGES = 4  # processes judging runs at most
# The columns a run's verdict needs, as the contract shows them on the site: its points'
# identity, status, samples and machine (summary.py's point table over these alone is the same
# for the verdict, and a fraction of the work).
VERDICT_COLUMNS = list(contract.shown_in(contract.SITE))
# Those and generation's own: what generation's verdict needs (verdicts/generation.py).
GENERATION_COLUMNS = list(dict.fromkeys(
    VERDICT_COLUMNS + [declared.name for declared in contract.GENERATION]))


def run_verdicts(store, run_ids):
    """Per run of ``run_ids``: statistics.pair_summary of its rows, each run judged once (a
    frame with run_id), and {run id: why not} for the runs that could not be judged. The site
    is two-sided: its pages show the pair pairs.SHOWN."""
    failed = {}
    if not len(run_ids):
        return pd.DataFrame(), failed
    rows = archive.query(store, "SELECT run_id, %s FROM points WHERE list_contains(?, run_id)"
                         % ", ".join(VERDICT_COLUMNS), [list(run_ids)], views=("points",))
    found = []
    for run_id, frame in rows.groupby("run_id", sort=False):
        frame = frame.drop(columns="run_id")  # the point table keeps the counted rows
        try:
            points = summary.with_reported(frame)
            ratios = pairs.shown(statistics.point_ratios(points))
            judged = statistics.pair_summary(ratios, points)  # with the geometric mean's interval
        except Exception as error:  # such a run has no verdict, as its headline says
            failed[run_id] = contract.error_line(error)
            continue
        judged.insert(0, "run_id", run_id)
        found.append(judged)
    return (pd.concat(found, ignore_index=True) if found else pd.DataFrame()), failed


def generation_verdicts(store, run_ids):
    """Of the runs ``run_ids`` that generated text: each one's generation verdict
    (generation.generation_verdict) and its points' ratios (generation.point_ratios), each
    with run_id. Judged here: a run's generation points are few."""
    rows = archive.query(store, "SELECT run_id, %s FROM points WHERE task = ? AND "
                                "list_contains(?, run_id)" % ", ".join(GENERATION_COLUMNS),
                         [generation.TASK, list(run_ids)], views=("points",))
    verdicts, ratios = [pd.DataFrame(columns=["run_id"] + generation.COLUMNS)], \
        [pd.DataFrame(columns=["run_id"] + generation.RATIO_COLUMNS)]
    for run_id, frame in rows.groupby("run_id", sort=False):
        frame = frame.drop(columns="run_id")
        verdicts.append(generation.generation_verdict(frame).assign(run_id=run_id))
        ratios.append(generation.point_ratios(frame).assign(run_id=run_id))
    return tuple(pd.concat([table for table in tables if len(table)] or tables[:1],
                           ignore_index=True) for tables in (verdicts, ratios))


def start_judging(store, run_ids):
    """Judge ``run_ids`` (run_verdicts) in other processes while this one draws the trends: a
    function that waits for them and returns (verdicts, failed). One process less than the
    CPUs (at least one, at most JUDGES), each a share of the runs, while this one draws.
    Spawned, as DuckDB's threads do not survive a fork."""
    if not len(run_ids):
        return lambda: run_verdicts(store, [])
    count = max(1, min(JUDGES, (os.cpu_count() or 1) - 1, len(run_ids)))
    pool = futures.ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
    shares = [pool.submit(run_verdicts, store, list(run_ids[index::count]))
              for index in range(count)]

    def finish():
        try:
            answers = [share.result() for share in shares]
        finally:
            pool.shutdown(cancel_futures=True)
        frames = [frame for frame, _ in answers if len(frame)]
        failed = dict(item for _, found in answers for item in found.items())
        return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), failed
    return finish
