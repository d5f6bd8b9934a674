#!/usr/bin/env python
"""Two methods side by side: an older checkout's and this one's, each run twice, alternating.

A change of the method counts only if it holds against the old one on the same machine in the
same hour, so the four runs alternate (old A, new A, old B, new B): a drift of the host lands on
both. Each method's pair is then an A/A pair (benchmarks/aa.py analyse): how often its verdicts
agree, whether any reversed, how often each run's interval holds the other's ratio against the
calibrated simulation, and where the time went. Per method it adds what a user waits for:
decided verdicts (faster either way, or equivalent) per hour of run.

    git worktree add /tmp/old REV
    .venv/bin/python benchmarks/methods.py --old /tmp/old --output /tmp/methods
    .venv/bin/python benchmarks/methods.py --output /tmp/methods --analyse   # no new runs

Writes ``methods.json`` in the output folder and prints a summary.
"""
import argparse
import json
import os
import sys

import aa

ORDER = [("old", "a"), ("new", "a"), ("old", "b"), ("new", "b")]


def folder(output, method, run):
    return os.path.join(output, "%s-%s" % (method, run))


def per_hour(count, wall_s):
    return round(count / (wall_s / 3600.0), 1) if wall_s else None


def method_figures(output, method, walls):
    """One method's A/A pair analysed, with decided verdicts per hour of run."""
    folder_a, folder_b = folder(output, method, "a"), folder(output, method, "b")
    result = aa.analyse(folder_a, folder_b)
    runs = {}
    for run, path in (("a", folder_a), ("b", folder_b)):
        wall_s = walls.get("%s-%s" % (method, run), {}).get("wall_s")
        long_frame = aa.read_run(path)
        runs[run] = aa.run_figures(path, long_frame, wall_s)
        runs[run]["wall_s"] = wall_s
        runs[run]["decided_per_hour"] = per_hour(result["decisions"][run]["decided"], wall_s)
        runs[run]["processes"] = int(aa.breakdown.as_processes(long_frame).groupby(
            ["framework", "mode", "model", "replicate", "attempt"], dropna=False).ngroups)
        if "marked_samples" in long_frame.columns:
            runs[run]["samples_marked"] = int(sum(
                len(marked) for marked in long_frame["marked_samples"] if marked is not None))
        runs[run]["samples_counted"] = int(aa.replicates.counted(long_frame)["n_samples"].sum())
    result["runs"] = runs
    result["cpu"] = aa.read_run(folder_a)["cpu_model"].iloc[0]
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="folder for the four runs and methods.json")
    parser.add_argument("--old", help="the older method's checkout (a git worktree)")
    parser.add_argument("--configfile", help="a config file merged over config/config.yaml")
    parser.add_argument("--config", nargs="*", default=[], help="key=value overrides, both")
    parser.add_argument("--analyse", action="store_true", help="analyse the four finished runs")
    args = parser.parse_args(argv)
    walls_path = os.path.join(args.output, "walls.json")
    walls = json.load(open(walls_path)) if os.path.exists(walls_path) else {}
    if not args.analyse:
        if not args.old:
            parser.error("--old is required unless --analyse is given")
        checkouts = {"old": os.path.abspath(args.old), "new": aa.CHECKOUT}
        for method, run in ORDER:
            name = "%s-%s" % (method, run)
            if name in walls:  # finished before: a stopped study resumes
                continue
            walls[name] = aa.run_workflow(folder(args.output, method, run), args.config,
                                          args.configfile, checkouts[method])
            with open(walls_path, "w") as handle:
                json.dump(walls, handle, indent=2)
            print("%s: %.0f s" % (name, walls[name]["wall_s"]), flush=True)
    result = dict((method, method_figures(args.output, method, walls))
                  for method in ("old", "new"))
    with open(os.path.join(args.output, "methods.json"), "w") as handle:
        json.dump(result, handle, indent=2, default=str)
    for method in ("old", "new"):
        figures = result[method]
        print("%s: %s" % (method, json.dumps({
            "wall_s": [figures["runs"][run]["wall_s"] for run in ("a", "b")],
            "decided_per_hour": [figures["runs"][run]["decided_per_hour"] for run in ("a", "b")],
            "decisions": figures["decisions"], "coverage": figures["coverage"]}, default=str)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
