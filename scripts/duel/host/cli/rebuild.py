"""``duel rebuild``: a past run made again from its manifest, then compared with the original."""
import os
import sys

from duel.host.cli import command, compare
from duel.host.provenance import rebuild

DESCRIPTION = """Rebuild a past run from its manifest, then compare it with the original.

RUN_DIR is a run folder (or its results/ folder) with manifests in results/runs/. Each
invocation that wrote shards still in RUN_DIR is rebuilt at its recorded commit (plus its
recorded diff) in a clone under DIR/rebuild/ (this checkout is never touched), with its recorded
config and model files, its era environments built or reused from that commit's lock files (or
with --today-stack this checkout's), into DIR. Then `duel compare RUN_DIR DIR` compares the two
into DIR/comparison/. The first lines printed say whether code, software and hardware are the
same, then the comparison's verdicts."""


def add(subparsers):
    parser = command.add(
        subparsers, "rebuild", DESCRIPTION,
        {command.FINE: "the rebuild ran and no point is clearly slower than in RUN_DIR",
         command.FINDING: "a point of the rebuild is clearly slower than in RUN_DIR",
         command.BAD_INPUT: "bad input, or RUN_DIR cannot be rebuilt (no manifest, a commit or "
                            "image missing): one line, before any job",
         command.FAILED: "the rebuild's workflow failed (its log is named)"},
        ["duel rebuild runs/old --output runs/old-again",
         "duel rebuild runs/old --output runs/old-again --models gpt2 --cells pytorch/eager",
         "duel rebuild runs/old --output runs/old-today --today-stack"])
    parser.add_argument("run", metavar="RUN_DIR",
                        help="the run folder to rebuild (or its results/ folder)")
    parser.add_argument("--output", metavar="DIR", required=True,
                        help="a new folder the rebuild runs in")
    parser.add_argument("--models", type=command.items, action="extend",
                        help="only these models, comma-separated")
    parser.add_argument("--cells", type=command.items, action="extend",
                        help="only these framework/mode cells, comma-separated, "
                             "e.g. pytorch/eager,tensorflow/function")
    parser.add_argument("--today-stack", action="store_true",
                        help="same code and config, this checkout's lock files: what did the "
                             "upgrade change?")
    parser.add_argument("--cores", default="all", help="snakemake --cores (default: all)")
    parser.set_defaults(func=run)


def run(args):
    try:
        parts, orphans, cells = rebuild.prepare(args.run, args.output, command.CHECKOUT,
                                                args.cells)
        if orphans:
            sys.stderr.write("cannot rebuild %d shards: no manifest says which run wrote them: "
                             "%s\n" % (len(orphans), ", ".join(orphans)))
        lines = []
        for index, (path, record, shards) in enumerate(parts, 1):
            rebuilt = rebuild.run_part(args.output, index, path, record, command.CHECKOUT,
                                       args.models, cells, args.today_stack, args.cores)
            if len(parts) > 1:
                lines.append("part %d of %d (%d shards, run of %s):"
                             % (index, len(parts), len(shards), record["started_at"]))
            lines.append(rebuild.same_code(record, args.today_stack))
            lines.append(rebuild.same_software(record, rebuilt))
            lines.append(rebuild.same_hardware(record["machine"], rebuilt["machine"]))
    except rebuild.RebuildError as error:
        raise command.Refusal(str(error))
    except rebuild.RebuildFailed as error:
        raise command.Failure(str(error))
    print("\n".join(lines))
    sys.stdout.flush()
    return compare.compare(args.run, args.output, os.path.join(args.output, "comparison"))
