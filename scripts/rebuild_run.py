#!/usr/bin/env python
"""Rebuild a past run from its manifest, then compare the rebuild with the original.

    .venv/bin/python scripts/rebuild_run.py RUN --output NEW
    .venv/bin/python scripts/rebuild_run.py RUN --output NEW --models gpt2 --cells pytorch/eager
    .venv/bin/python scripts/rebuild_run.py RUN --output NEW --today-stack

RUN is a run folder (or its results/ folder) with manifests in results/runs/. Each invocation
that wrote shards still in RUN is rebuilt at its recorded commit (plus its recorded diff) in a
clone under NEW/rebuild/ (this checkout is never touched), with its recorded config and model
files, its era environments built or reused from that commit's lock files (or with
--today-stack this checkout's), into NEW. Then scripts/compare_runs.py compares RUN with NEW.
The first lines printed say whether code, software and hardware are the same, then the
comparison's verdicts. Exit: the comparison's (0 no clear slowdown, 1 a clear slowdown), 2 bad
input (one line, before any job), 3 the rebuild's workflow failed.
"""
import argparse
import os
import subprocess
import sys

SCRIPTS = os.path.dirname(os.path.abspath(__file__))  # holds duel/
sys.path.insert(0, SCRIPTS)
REPOSITORY = os.path.dirname(SCRIPTS)

from duel.cell import environment  # noqa: E402
from duel.host.provenance import rebuild  # noqa: E402

COMPARE_RUNS = os.path.join(SCRIPTS, "compare_runs.py")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="the run folder to rebuild (or its results/ folder)")
    parser.add_argument("--output", required=True, help="folder the rebuild runs in")
    parser.add_argument("--models", help="only these models, comma-separated")
    parser.add_argument("--cells", help="only these framework/mode cells, comma-separated, "
                                        "e.g. pytorch/eager,tensorflow/function")
    parser.add_argument("--today-stack", action="store_true",
                        help="same code and config, this checkout's lock files: what did the "
                             "upgrade change?")
    parser.add_argument("--cores", default="all", help="snakemake --cores (default: all)")
    return parser.parse_args(argv)


def split(text):
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def compare_runs(base, new, output):
    """scripts/compare_runs.py BASE NEW --output DIR: (exit code, its output)."""
    answer = subprocess.run([sys.executable, COMPARE_RUNS, base, new, "--output", output],
                            capture_output=True, text=True)
    return answer.returncode, (answer.stdout + answer.stderr).rstrip()


def prepare(args):
    """Every check that can refuse, before any job: the parts, their commits and images."""
    results = rebuild.results_dir(args.run)
    if os.path.abspath(args.output) == os.path.dirname(os.path.abspath(results)):
        raise rebuild.RebuildError("--output must be a new folder, not the run itself")
    parts, orphans = rebuild.plan_parts(results)
    cells = [tuple(cell.split("/", 1)) for cell in split(args.cells) or []]
    if any(len(cell) != 2 for cell in cells):
        raise rebuild.RebuildError("--cells: write each cell as framework/mode, e.g. "
                                   "pytorch/eager")
    for _, record, _ in parts:
        rebuild.check_commit(REPOSITORY, record["git_commit"])
        rebuild.check_images(record)
    return results, parts, orphans, cells


def run_part(args, index, path, record, cells):
    """Rebuild one invocation into args.output; returns the rebuild's manifest."""
    folder = os.path.join(os.path.abspath(args.output), "rebuild", "part-%d" % index)
    code = os.path.join(folder, "code")
    diff = os.path.join(os.path.dirname(path), record["diff"]) if record.get("diff") else None
    rebuild.checkout(REPOSITORY, record["git_commit"].split("+")[0], diff, code)
    if args.today_stack:
        rebuild.use_todays_locks(REPOSITORY, code)
    config = rebuild.write_inputs(record, folder, REPOSITORY, split(args.models), cells)
    log = os.path.join(folder, "snakemake.log")
    sys.stderr.write("rebuilding %s at %s: log %s\n" % (path, record["git_commit"][:12], log))
    started = environment.utc_now()
    with open(log, "w") as handle:
        answer = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", os.path.join(code, "Snakefile"),
             "--directory", os.path.abspath(args.output), "--cores", str(args.cores),
             "--configfile", config], stdout=handle, stderr=subprocess.STDOUT)
    if answer.returncode != 0:
        with open(log) as handle:
            tail = handle.read().strip().splitlines()[-15:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise SystemExit("the rebuild's workflow failed (exit %d): see %s"
                         % (answer.returncode, log))
    results = os.path.join(args.output, "results")
    # A rebuild resumed with nothing left to do starts no run: its earlier manifest stands.
    rebuilt = rebuild.newest_manifest(results, started) or rebuild.newest_manifest(results, "")
    if rebuilt is None:
        raise SystemExit("the rebuild at %s wrote no manifest (its commit predates run "
                         "manifests): its software cannot be compared" % record["git_commit"])
    return rebuilt


def main(argv=None):
    args = parse_args(argv)
    try:
        results, parts, orphans, cells = prepare(args)
    except rebuild.RebuildError as error:
        sys.stderr.write("rebuild_run: %s\n" % error)
        return 2
    if orphans:
        sys.stderr.write("cannot rebuild %d shards: no manifest says which run wrote them: %s\n"
                         % (len(orphans), ", ".join(orphans)))
    lines = []
    for index, (path, record, shards) in enumerate(parts, 1):
        try:
            rebuilt = run_part(args, index, path, record, cells)
        except rebuild.RebuildError as error:
            sys.stderr.write("rebuild_run: %s\n" % error)
            return 2
        except SystemExit as error:
            sys.stderr.write("rebuild_run: %s\n" % error)
            return 3
        if len(parts) > 1:
            lines.append("part %d of %d (%d shards, run of %s):"
                         % (index, len(parts), len(shards), record["started_at"]))
        lines.append(rebuild.same_code(record, args.today_stack))
        lines.append(rebuild.same_software(record, rebuilt))
        lines.append(rebuild.same_hardware(record["machine"], rebuilt["machine"]))
    print("\n".join(lines))
    sys.stdout.flush()
    return finish_with_comparison(args.run, args.output)


def finish_with_comparison(base, new):
    """The comparison of the original and the rebuild (scripts/compare_runs.py): its lines, its exit."""
    try:
        rebuild.check_compare(COMPARE_RUNS)
    except rebuild.RebuildError as error:
        sys.stderr.write("rebuild_run: %s\n" % error)
        return 2
    code, output = compare_runs(base, new, os.path.join(new, "comparison"))
    print(output)
    return code


if __name__ == "__main__":
    sys.exit(main())
