"""``duel trend``: per point, the clear steps in its figure over the stored runs."""
from duel.host.cli import command, history, store
from duel.host.store import questions
from duel.host.verdicts import statistics

DESCRIPTION = """Find the steps in points' figures over the runs in the results store.

Per point and machine, the runs in time order are split where their levels differ most (as
asv finds steps), and a split is a step only when Welch's t over the runs on each side (at
least %d a side) puts the ratio of the levels clearly beyond the minimum effect: one outlying
run is never a step, and runs marked noisy (duel runs) are left out. Without POINT, every
point.""" % questions.MIN_RUNS


def add(subparsers):
    parser = command.add(subparsers, "trend", DESCRIPTION,
                         {command.FINE: "no point stepped slower",
                          command.FINDING: "a point stepped clearly slower",
                          command.BAD_INPUT: None},
                         ["duel trend", "duel trend distilbert-base-uncased/pytorch/eager/1x8"])
    parser.add_argument("points", nargs="*", type=history.points, metavar="POINT")
    store.store_option(parser)
    store.filter_options(parser)
    store.figure_option(parser)
    parser.add_argument("--min-effect", type=float, default=statistics.MIN_EFFECT,
                        help="smallest relative step called clear (default %(default)s)")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of lines")
    parser.set_defaults(func=run)


def run(args):
    table = questions.trend(store.opened(args), args.points, args.min_effect, args.figure,
                            **store.filters(args))
    stepped = table.dropna(subset=["ratio"])
    if args.csv:
        print(table.to_csv(index=False), end="")
    else:
        for _, row in stepped.iterrows():
            print("%s on %s (%s %s): %s at run %s (%s, commit %s): %.4g -> %.4g ms, ratio %.2f "
                  "[%.2f, %.2f]" % (questions.point_label(row), row["machine"], row["era"],
                                    row["method"], row["verdict"], row["step_run"],
                                    row["step_started_at"], str(row["step_commit"])[:10],
                                    row["before_ms"], row["after_ms"], row["ratio"], row["low"],
                                    row["high"]))
        series = table.drop_duplicates(questions.SERIES)
        left_out = int(series["noisy_runs"].max()) if len(series) else 0
        print("%d point series over %d runs at most: %d step%s%s" % (
            len(series), int(series["runs"].max()) if len(series) else 0, len(stepped),
            "" if len(stepped) == 1 else "s",
            " (noisy runs left out: %d at most)" % left_out if left_out else ""))
    slower = stepped[stepped["verdict"] == "slower"]
    return command.FINDING if len(slower) else command.FINE
