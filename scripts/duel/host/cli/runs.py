"""``duel runs``: the runs in the results store, a line each."""
import pandas as pd

from duel.host.cli import command, store
from duel.host.store import questions

DESCRIPTION = """List the runs in the results store, oldest first.

When and where each ran (machine), in what (eras, commit), how many points and processes, and
its headline: per pair of modes, the geometric-mean PyTorch/TensorFlow ratio (< 1: PyTorch
faster) and the points each framework clearly wins. A noisy run says so in its status: how
many of its points were still disturbed after their last measurement, and the host's steal."""


def add(subparsers):
    parser = command.add(subparsers, "runs", DESCRIPTION, {command.FINE: None,
                                                          command.BAD_INPUT: None},
                         ["duel runs", "duel runs --machine a100-node --csv"])
    store.store_option(parser)
    parser.add_argument("--machine", type=command.name, default=None, help="only this machine")
    parser.add_argument("--era", type=command.name, default=None, help="only runs in this era")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    parser.set_defaults(func=run)


def run(args):
    table = questions.run_table(store.opened(args), args.machine, args.era)
    if args.csv:
        print(table.to_csv(index=False), end="")
        return command.FINE
    table["git_commit"] = table["git_commit"].fillna("").astype(str).str[:10]
    table["status"] = [questions.status_text(run) for _, run in table.iterrows()]
    table = table[questions.RUN_COLUMNS]
    with pd.option_context("display.max_colwidth", 200, "display.width", 250):
        print(table.to_string(index=False) if len(table) else "no runs in the store")
    return command.FINE
