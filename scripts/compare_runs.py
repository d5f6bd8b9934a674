"""Compare two finished runs: what got faster or slower, how sure, and what changed in between.

    .venv/bin/python scripts/compare_runs.py BASE NEW --output DIR

BASE (the baseline) and NEW are run directories or their results/summary.parquet. Writes
DIR/comparison.{md,csv,xlsx,png,svg} and DIR/environment.csv (duel/host/compare/report.py).
Exit status: 0 when no point is clearly slower by more than --threshold, 1 when one is, 2 on
bad input (one line on stderr, nothing written). The workflow's compare_baseline rule (config key
baseline) makes the same comparison (scripts/rules/compare_baseline.py), where a slowdown does not
fail the rule.
"""
import argparse
import math
import os
import sys

SCRIPTS = os.path.dirname(os.path.abspath(__file__))  # holds duel/
sys.path.insert(0, SCRIPTS)

from duel.host.compare import changes, two_runs  # noqa: E402
from duel.host.verdicts import statistics  # noqa: E402

PROG = "compare_runs.py"


class Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit status 2 (argparse prints its usage too)."""

    def error(self, message):
        self.exit(2, "%s: error: %s\n" % (PROG, message))


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


def parser():
    result = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    result.add_argument("base", help="the baseline: a run directory or its summary.parquet")
    result.add_argument("new", help="the run compared with it")
    result.add_argument("--output", default="comparison",
                        help="folder for the outputs (default: ./comparison)")
    result.add_argument("--min-effect", type=non_negative, default=statistics.MIN_EFFECT,
                        help="smallest relative change called clear (default %(default)s = 5%%)")
    result.add_argument("--threshold", type=positive, default=None,
                        help="exit 1 when a point's new/base interval lies wholly above "
                             "1 + this (default: the minimum effect)")
    result.add_argument("--ignore", action="append", default=[], choices=changes.IGNORABLE,
                        help="match points across this identity key, e.g. --ignore era to "
                             "compare an hf2019 run with a current one (repeatable)")
    result.add_argument("--fail-on-new-failures", action="store_true",
                        help="exit 1 also when a point that was ok in the base fails in the "
                             "new run")
    result.add_argument("--no-machine-band", dest="machine_band", action="store_false",
                        help="judge every change against the minimum effect alone, also when the "
                             "runs' canaries say the machine itself ran at another speed")
    result.add_argument("--resamples", type=count, default=statistics.RESAMPLES,
                        help="bootstrap resamples (default %(default)s)")
    return result


def main(argv=None):
    """The exit status: 0, 1 (a point clearly slower), 2 (bad input; --help: 0)."""
    try:
        arguments = parser().parse_args(argv)
    except SystemExit as stop:
        return stop.code
    try:
        return two_runs.compare_and_write(
            arguments.base, arguments.new, arguments.output, arguments.ignore,
            arguments.min_effect, arguments.threshold, arguments.fail_on_new_failures,
            arguments.resamples, arguments.machine_band)
    except changes.CompareError as error:
        sys.stderr.write("%s: error: %s\n" % (PROG, error))
        return 2


if __name__ == "__main__":
    sys.exit(main())
