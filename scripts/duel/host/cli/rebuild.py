"""``duel rebuild``: a past run made again from its manifest, then compared with the original."""
import os
import subprocess
import sys

from duel.cell import environment
from duel.host.cli import command, compare
from duel.host.plan import layout
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


def prepare(args):
    """Every check that can refuse, before any job: the parts, their commits and images."""
    results = rebuild.results_dir(args.run)
    if os.path.abspath(args.output) == os.path.dirname(os.path.abspath(results)):
        raise rebuild.RebuildError("--output must be a new folder, not the run itself")
    parts, orphans = rebuild.plan_parts(results)
    cells = [tuple(cell.split("/", 1)) for cell in args.cells or []]
    if any(len(cell) != 2 for cell in cells):
        raise rebuild.RebuildError("--cells: write each cell as framework/mode, e.g. "
                                   "pytorch/eager")
    for _, record, _ in parts:
        rebuild.check_commit(command.CHECKOUT, record["git_commit"])
        rebuild.check_images(record)
    return parts, orphans, cells


def run_part(args, index, path, record, cells):
    """Rebuild one invocation into args.output; returns the rebuild's manifest."""
    folder = os.path.join(os.path.abspath(args.output), "rebuild", "part-%d" % index)
    code = os.path.join(folder, "code")
    diff = os.path.join(os.path.dirname(path), record["diff"]) if record.get("diff") else None
    rebuild.checkout(command.CHECKOUT, record["git_commit"].split("+")[0], diff, code)
    if args.today_stack:
        rebuild.use_todays_locks(command.CHECKOUT, code)
    config = rebuild.write_inputs(record, folder, command.CHECKOUT, args.models, cells)
    log = os.path.join(folder, "snakemake.log")
    sys.stderr.write("rebuilding %s at %s: log %s\n" % (path, record["git_commit"][:12], log))
    started = environment.utc_now()
    with open(log, "w") as handle:
        answer = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", os.path.join(code, "Snakefile"),
             "--directory", os.path.abspath(args.output), "--cores", str(args.cores),
             "--configfile", config], stdout=handle, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=os.path.join(code, "scripts")))  # its own code
    if answer.returncode != 0:
        with open(log) as handle:
            tail = handle.read().strip().splitlines()[-15:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise command.Failure("the rebuild's workflow failed (exit %d): see %s"
                              % (answer.returncode, log))
    results = os.path.join(args.output, layout.RESULTS)
    # A rebuild resumed with nothing left to do starts no run: its earlier manifest stands.
    rebuilt = rebuild.newest_manifest(results, started) or rebuild.newest_manifest(results, "")
    if rebuilt is None:
        raise command.Failure("the rebuild at %s wrote no manifest (its commit predates run "
                              "manifests): its software cannot be compared"
                              % record["git_commit"])
    return rebuilt


def run(args):
    try:
        parts, orphans, cells = prepare(args)
        if orphans:
            sys.stderr.write("cannot rebuild %d shards: no manifest says which run wrote them: "
                             "%s\n" % (len(orphans), ", ".join(orphans)))
        lines = []
        for index, (path, record, shards) in enumerate(parts, 1):
            rebuilt = run_part(args, index, path, record, cells)
            if len(parts) > 1:
                lines.append("part %d of %d (%d shards, run of %s):"
                             % (index, len(parts), len(shards), record["started_at"]))
            lines.append(rebuild.same_code(record, args.today_stack))
            lines.append(rebuild.same_software(record, rebuilt))
            lines.append(rebuild.same_hardware(record["machine"], rebuilt["machine"]))
    except rebuild.RebuildError as error:
        raise command.Refusal(str(error))
    print("\n".join(lines))
    sys.stdout.flush()
    return compare.compare(args.run, args.output, os.path.join(args.output, "comparison"))
