"""``duel compare``: two finished runs, what got faster or slower, how sure, what changed."""
import argparse
import math
import os

from duel.host.cli import command, store
from duel.host.compare import changes, two_runs
from duel.host.store import archive, questions
from duel.host.verdicts import statistics

DESCRIPTION = """Compare two finished runs.

What got faster or slower, how sure, and what changed in between (environment, software,
machine). BASE (the baseline) and NEW are run folders, their results/summary.parquet, or ids of
runs in the results store (duel runs lists them). Writes
DIR/comparison.{md,csv,xlsx,png,svg} and DIR/environment.csv. The workflow's compare_baseline
rule (config key baseline) makes the same comparison, where a slowdown does not fail the rule."""


def positive(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError("must be a positive number, not %r" % text)
    return value


def non_negative(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError("must be zero or a positive number, not %r" % text)
    return value


def count(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 100:
        raise argparse.ArgumentTypeError("must be a whole number of at least 100, not %r" % text)
    return value


def keys(text):
    """--ignore's comma-separated identity keys, each one of changes.IGNORABLE."""
    found = command.items(text)
    wrong = [key for key in found if key not in changes.IGNORABLE]
    if wrong:
        raise argparse.ArgumentTypeError("%s: not a key to ignore (%s)"
                                         % (", ".join(wrong), ", ".join(changes.IGNORABLE)))
    return found


def add(subparsers):
    parser = command.add(
        subparsers, "compare", DESCRIPTION,
        {command.FINE: "no point clearly slower by more than --threshold",
         command.FINDING: "a point clearly slower (with --fail-on-new-failures also a point "
                          "that was ok in BASE and fails in NEW)",
         command.BAD_INPUT: None},
        ["duel compare runs/before runs/after --output comparison",
         "duel compare runs/hf2019 runs/current --ignore era --output era-comparison"])
    parser.add_argument("base", help="the baseline: a run folder, its summary.parquet or a "
                                     "stored run's id")
    parser.add_argument("new", help="the run compared with it")
    parser.add_argument("--output", metavar="DIR", default="comparison",
                        help="folder for the outputs (default: ./comparison)")
    parser.add_argument("--min-effect", type=non_negative, default=statistics.MIN_EFFECT,
                        help="smallest relative change called clear (default %(default)s = 5%%)")
    parser.add_argument("--threshold", type=positive, default=None,
                        help="exit 1 when a point's new/base interval lies wholly above "
                             "1 + this (default: the minimum effect)")
    parser.add_argument("--ignore", type=keys, action="extend", default=[], metavar="KEYS",
                        help="match points across these identity keys, comma-separated (%s), "
                             "e.g. --ignore era to compare an hf2019 run with a current one"
                             % ", ".join(changes.IGNORABLE))
    parser.add_argument("--fail-on-new-failures", action="store_true",
                        help="exit 1 also when a point that was ok in the base fails in the "
                             "new run")
    parser.add_argument("--no-machine-band", dest="machine_band", action="store_false",
                        help="judge every change against the minimum effect alone, also when the "
                             "runs' canaries say the machine itself ran at another speed")
    parser.add_argument("--resamples", type=count, default=statistics.RESAMPLES,
                        help="bootstrap resamples (default %(default)s)")
    store.store_option(parser)
    parser.set_defaults(func=run)


def resolved(reference, store_dir):
    """A run folder or summary file as given; else the stored run of that id."""
    if os.path.exists(reference) or not archive.RUN_ID.match(reference):
        return reference
    try:
        archive.version(store_dir)
        frame = questions.run_frame(store_dir, reference)
    except archive.StoreError as error:
        raise command.Refusal("%s: neither a run folder nor a stored run (%s)"
                              % (reference, error))
    try:
        return changes.read_run_frame(frame, reference, "%s in %s" % (reference, store_dir))
    except changes.CompareError as error:
        raise command.Refusal(str(error))


def compare(base, new, output, **options):
    """Compare and write; the exit status. Bad input is a command.Refusal."""
    try:
        return two_runs.compare_and_write(base, new, output, **options)
    except changes.CompareError as error:
        raise command.Refusal(str(error))


def run(args):
    store_dir = archive.locate(args.store)
    return compare(resolved(args.base, store_dir), resolved(args.new, store_dir), args.output, ignore=args.ignore,
                   min_effect=args.min_effect, threshold=args.threshold,
                   fail_on_new_failures=args.fail_on_new_failures, resamples=args.resamples,
                   machine_band=args.machine_band)
