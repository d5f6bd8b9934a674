"""``duel history``: one point's figure over the stored runs, in time order."""
import argparse

import pandas as pd

from duel.host.cli import command, store
from duel.host.store import archive, questions

DESCRIPTION = """Show points over the runs in the results store, oldest run first.

Per run: its figure for the point (the method's statistic pooled over the run's processes), the
95%% interval over those processes, the machine, era and commit; a run whose host was noisy
(duel runs) says so in its status. Of a generation point, --figure follows its time to first
token or per output token instead, and its tokens per second and tokens that agreed are shown.
POINT is %s.""" % questions.POINT_SYNTAX


def points(text):
    try:
        return questions.parse_point(text)
    except archive.StoreError as error:
        raise argparse.ArgumentTypeError(str(error))


def add(subparsers):
    parser = command.add(subparsers, "history", DESCRIPTION,
                         {command.FINE: None, command.BAD_INPUT: None},
                         ["duel history bert-base-cased/pytorch/eager/1x128",
                          "duel history gpt2/tensorflow/function/2x64 --machine a100-node",
                          "duel history gpt2/pytorch/eager/1x8 --figure first_token_ms"])
    parser.add_argument("points", nargs="+", type=points, metavar="POINT")
    store.store_option(parser)
    store.filter_options(parser)
    store.figure_option(parser)
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    parser.set_defaults(func=run)


def run(args):
    table = questions.history(store.opened(args), args.points, args.figure,
                              **store.filters(args))
    if args.csv:
        print(table.to_csv(index=False), end="")
        return command.FINE
    if table.empty:
        print("no stored run has these points")
        return command.FINE
    table["point"] = [questions.point_label(row) for _, row in table.iterrows()]
    table["git_commit"] = table["git_commit"].fillna("").str[:10]
    table["status"] = [status + (", noisy run" if noisy is True else "")
                       for status, noisy in zip(table["status"], table["noisy"])]
    table["interval_ms"] = ["" if pd.isna(low) else "%.4g-%.4g" % (low, high)
                            for low, high in zip(table["low_ms"], table["high_ms"])]
    shown = ["point", "started_at", "run_id", "machine", "era", "git_commit", "status",
             "figure_ms", "interval_ms", "processes"]
    if table["tokens_per_s"].notna().any():  # generation points: their rate and tokens
        shown += ["tokens_per_s", "tokens_agree"]
    with pd.option_context("display.width", 250, "display.float_format", "{:.4g}".format):
        print(table[shown].to_string(index=False))
    return command.FINE
