"""``duel store``: add a run folder to the results store, take a run out, check it, or ask it in SQL.

Also the options every command over the store shares (``--store``, the point filters)."""
from duel.host.cli import command
from duel.host.store import archive, questions

DESCRIPTION = """Add runs to the results store, remove one, check it, or query it in SQL.

The workflow adds every run it makes when the run ends (the store: config key store, else
$DUEL_STORE, else results/store; the same for every duel command). `add` adds the runs of a
results folder made anywhere: another machine, a SLURM cluster, an older Duel version (migrated
on the way in). Adding twice stores once. `rm` takes a wrong run out of every history, and later
adds leave it out (`add --restore RUN` brings it back). `check` reads every file of the store and
names the runs that cannot be read; with --fix it sets them aside (set-aside/ in the store), out
of every question, and migrates a store an older Duel wrote (as any add does, once). `sql` runs a query over the views runs (a row per run), points (a row per
point, process and attempt, samples included) and figures (the same rows without samples, with
their run's machine, start and commit), e.g.
  duel store sql "SELECT machine, count(*) FROM runs GROUP BY machine" """


def store_option(parser):
    parser.add_argument("--store", metavar="DIR", default=None,
                        help="the results store (default: $DUEL_STORE, else results/store)")


def filter_options(parser):
    """The filters of a point's history: where and in what its runs ran."""
    for name in questions.FILTERS:
        parser.add_argument("--" + name, default=None, type=command.name,
                            help="only runs with this %s" % name)


def figure_option(parser):
    """Which figure of a point its history follows (questions.FIGURES)."""
    parser.add_argument("--figure", choices=questions.FIGURES, default=questions.TIME,
                        help="the method's time per call (time, the default), or a generation "
                             "point's time to first token or per output token")


def filters(args):
    return dict((name, getattr(args, name)) for name in questions.FILTERS)


def opened(args):
    """The store the command reads: StoreError (a refusal) where there is none."""
    store = archive.locate(args.store)
    try:
        archive.version(store)
    except archive.StoreError as error:
        raise command.Refusal(str(error))
    return store


def add(subparsers):
    parser = command.add(
        subparsers, "store", DESCRIPTION,
        {command.FINE: None, command.FINDING: "check: damaged runs found (and set aside with --fix)",
         command.BAD_INPUT: "bad input: a corrupt or half-written run (its file named), a run "
                            "id not in the store, a folder that is not a store"},
        ["duel store add results", "duel store add /scratch/cluster-run --machine a100-node",
         "duel store add results --store /shared/duel-store --create",
         "duel store rm 20261203T081549Z-node1-3765", "duel store check --fix",
         "duel store sql \"SELECT * FROM runs\""])
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    not_a_store = "a folder that is not a store"
    adding = command.add(
        actions, "add", "Add the runs of a results folder (made anywhere) to the store.",
        {command.FINE: None, command.BAD_INPUT: "bad input: a corrupt or half-written run (its "
                                                "file named), " + not_a_store},
        ["duel store add results", "duel store add /scratch/cluster-run --machine a100-node"])
    adding.add_argument("folder", metavar="DIR", help="a results folder, or the folder holding it")
    adding.add_argument("--machine", type=command.name, default=None,
                        help="the machine's name in the store (default: the run's own, else "
                             "its hostname)")
    adding.add_argument("--create", action="store_true",
                        help="make the store where there is none yet (else that is refused: a "
                             "mistyped path)")
    adding.add_argument("--restore", metavar="RUN", action="append", default=[],
                        help="add this run although duel store rm took it out (repeatable)")
    removing = command.add(
        actions, "rm", "Remove a run from the store and from every history.",
        {command.FINE: None, command.BAD_INPUT: "bad input: a run id not in the store, "
                                                + not_a_store},
        ["duel store rm 20261203T081549Z-node1-3765"])
    removing.add_argument("run_id", metavar="RUN", help="a run id (duel runs lists them)")
    checking = command.add(
        actions, "check", "Read every file; name (and set aside) the runs that cannot be read.",
        {command.FINE: None, command.FINDING: "damaged runs found (set aside with --fix: 0)",
         command.BAD_INPUT: "bad input: " + not_a_store},
        ["duel store check", "duel store check --fix"])
    checking.add_argument("--fix", action="store_true",
                          help="set the damaged runs aside (set-aside/ in the store); migrate "
                               "a store an older Duel wrote")
    asking = command.add(
        actions, "sql", "Run a SQL query over the views runs, points and figures.",
        {command.FINE: None, command.BAD_INPUT: "bad input: a query that fails, " + not_a_store},
        ["duel store sql \"SELECT machine, count(*) FROM runs GROUP BY machine\""])
    asking.add_argument("sql", metavar="QUERY")
    asking.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    for action in (adding, removing, checking, asking):
        store_option(action)
    parser.set_defaults(func=run)


def run(args):
    from duel.host.store import ingest  # reads shards: only an add needs it

    store = archive.locate(args.store)
    try:
        if args.action == "add":
            for run_id, count in ingest.add_folder(store, args.folder, args.machine,
                                                   create=args.create, restore=args.restore):
                print("added %s: %d shard%s" % (run_id, count, "" if count == 1 else "s"))
            print("%s: %d runs" % (store, len(archive.run_ids(store))))
        elif args.action == "rm":
            archive.remove(store, args.run_id)
            print("removed %s from %s (duel store add --restore %s brings it back)"
                  % (args.run_id, store, args.run_id))
        elif args.action == "check":
            return check(store, args.fix)
        else:
            archive.version(store)
            answer = archive.query(store, args.sql)
            print(answer.to_csv(index=False) if args.csv else answer.to_string(index=False))
    except archive.StoreError as error:
        raise command.Refusal(str(error))
    except archive.duckdb.Error as error:
        raise command.Refusal("the query failed: %s" % str(error).splitlines()[0])
    return command.FINE


def check(store, fix):
    """Every run's files read whole: a line per damaged run; FINDING where any is left."""
    archive.version(store)
    damaged = archive.damaged_runs(store, full=True)
    runs = archive.run_ids(store)
    for run_id in sorted(damaged):
        print("damaged: %s: %s" % (run_id, damaged[run_id]))
    if fix:
        archive.set_aside_damaged(store, damaged)
    print("%s: %d runs, %d damaged%s" % (store, len(runs), len(damaged),
                                         ", set aside" if fix and damaged else
                                         (": duel store check --fix sets them aside"
                                          if damaged else "")))
    return command.FINDING if damaged and not fix else command.FINE
