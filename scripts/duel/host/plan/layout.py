"""Where a run writes: every path under results/, and the one way from a run folder to them.

The planner, the rules, the store, compare, render and provenance all name these, so a folder
moves in one place. Names are relative to a results folder (``SHARDS``) and, as the workflow
spells them from its working folder, under ``results/`` (``at(SHARDS)``). Paths use ``/``: they
are Snakemake patterns too.
"""
import os

from duel.cell import contract

RESULTS = "results"
SHARDS = "shards"
LOGS = "logs"
REFERENCES = "reference"
ARTIFACTS = "artifacts"
RUNS = "runs"
STORE = "store"
RETRIES = "retries"
OPEN_POINTS = "settle/open-points.json"
SUMMARY = "summary.parquet"
SUMMARY_CSV = "summary.csv"
SPREADSHEET = "summary.xlsx"
SUMMARY_FILES = (SUMMARY, SUMMARY_CSV, SPREADSHEET)
CSV_2019 = "csv-2019"
STATISTICS = "statistics"
# The verdict's tables and page, made from the summary.
RATIOS = STATISTICS + "/ratios.csv"
PAIRS = STATISTICS + "/pairs.csv"
HEADLINE = STATISTICS + "/headline.csv"
NOISE = STATISTICS + "/noise.csv"
STATISTICS_PAGE = STATISTICS + "/statistics.html"
GENERATION = STATISTICS + "/generation.csv"
PLOTS = "plots"
ENVIRONMENT = "environment.html"
COMPARISON = "comparison"
# How a key of the cell's identity appears in its paths (default: the bare value).
PATH_PARTS = {"replicate": "r{replicate}"}


def at(*parts, results=RESULTS):
    """``parts`` joined under a results folder (default the workflow's ``results``)."""
    return "/".join((results,) + parts)


def cell_pattern(root, extension):
    """A per-cell path pattern, one folder level per identity key (contract.CELL_KEYS), e.g.
    results/shards/{era}/.../{model}/r{replicate}.parquet; a Snakemake output pattern too."""
    parts = [PATH_PARTS.get(key, "{%s}" % key) for key in contract.CELL_KEYS]
    return "%s/%s.%s" % (root, "/".join(parts), extension)


SHARD_PATTERN = cell_pattern(at(SHARDS), "parquet")
LOG_PATTERN = cell_pattern(at(LOGS, "cells"), "log")
REFERENCE_PATTERN = at(REFERENCES, "{era}", "{model}", "{weights}.json")
ARTIFACT_PATTERN = at(ARTIFACTS, "{era}", "{device}", "{artifact}", "{model}")


def cell_of(shard):
    """A shard's cell as its paths name it: 'current/cpu/.../tiny-bert/r1'."""
    return os.path.splitext(os.path.relpath(shard, at(SHARDS)))[0].replace(os.sep, "/")


def cell_log(shard):
    """The log of the cell whose shard is ``shard``."""
    return "%s.log" % at(LOGS, "cells", cell_of(shard))


def log(*parts):
    """A job's log file under results/logs/."""
    return at(LOGS, *parts)


# What each task's cells start from: the manifest make_reference writes for it (cell/reference.py).
WEIGHTS_OF_TASK = {"inference": "reference", "training": "training", "generation": "generation"}


def reference(era, model, weights, results=RESULTS):
    """The manifest of a model's reference outputs (``weights``: WEIGHTS_OF_TASK's values)."""
    return at(REFERENCES, era, model, weights + ".json", results=results)


def results_folder(path):
    """The results folder of ``path``: a run folder (holding results/) or a results folder
    itself (holding shards/, runs/ or the summary); None when it is neither."""
    for candidate in (os.path.join(path, RESULTS), path):
        if any(os.path.exists(os.path.join(candidate, part))
               for part in (SHARDS, RUNS, SUMMARY)):
            return candidate
    return None


def summary_file(path):
    """The merged table of ``path``: a run or results folder's summary, or the file itself;
    None when there is none."""
    if os.path.isfile(path):
        return path
    folder = results_folder(path)
    if folder is not None and os.path.isfile(os.path.join(folder, SUMMARY)):
        return os.path.join(folder, SUMMARY)
    return None
