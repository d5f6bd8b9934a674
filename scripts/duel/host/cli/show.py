"""``duel show``: what a finished run says at its end (render/outcome.py), again, on demand."""
import json
import os

from duel.host.cli import command
from duel.host.plan import layout
from duel.host.provenance import runs
from duel.host.render import bisection, outcome

DESCRIPTION = """Print a finished run's end-of-run lines.

The verdict per pair of modes (the points each framework clearly wins, the geometric-mean
PyTorch/TensorFlow ratio with its interval, the largest clear differences); task generation's
per pair of modes (the ratio of time to first token and per output token with their intervals,
tokens per second side by side, the tokens that agreed); how many verdicts
settling measured again; the points by status, with the first failure messages; the points
measured again and those left disturbed; where the run's time went. RUN_DIR is a run folder,
its results/ folder or its summary.parquet; the folder of a bisection (duel bisect) shows its
answer."""


def add(subparsers):
    parser = command.add(
        subparsers, "show", DESCRIPTION,
        {command.FINE: "every point ok (or skipped)",
         command.FINDING: "the run has failed points (status error, oom, killed or timeout)",
         command.BAD_INPUT: "bad input, or the run cannot be read (no results/summary.parquet)"},
        ["duel show runs/today", "duel show runs/today --json"])
    parser.add_argument("run", nargs="?", default=".", metavar="RUN_DIR",
                        help="the run folder (default: the current folder)")
    parser.add_argument("--json", action="store_true",
                        help='print {"lines": [...], "points": N, "failed": N} instead')
    parser.set_defaults(func=run)


def run(args):
    bisected = os.path.join(args.run, bisection.FILE)
    if os.path.isfile(bisected):  # a bisection's folder: its answer
        with open(bisected) as handle:
            record = json.load(handle)
        if args.json:
            print(json.dumps({"lines": bisection.lines(record), "points": len(record["releases"]),
                              "failed": 0}, indent=2))
        else:
            print("\n".join(bisection.lines(record)))
        return command.FINE
    path = layout.summary_file(args.run)
    if path is None:
        raise command.Refusal("%s: no results/summary.parquet (not a finished run)" % args.run)
    try:
        results_dir = os.path.dirname(path)
        lines, points, failed = outcome.finished_run(results_dir,
                                                     runs.last_wall_seconds(results_dir))
    except Exception as error:  # pyarrow's and pandas' many ways to say "not a summary"
        raise command.Refusal("%s: not a readable summary (%s)"
                              % (path, str(error).splitlines()[0] if str(error) else
                                 type(error).__name__))
    if args.json:
        print(json.dumps({"lines": lines, "points": points, "failed": failed}, indent=2))
    else:
        print("\n".join(lines))
    return command.FINDING if failed else command.FINE
