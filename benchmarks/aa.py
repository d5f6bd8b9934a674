#!/usr/bin/env python
"""A/A experiment: the same grid run twice, as two separate runs on one machine; do they agree?

A verdict is evidence only if it survives a rerun in fresh processes. This runs the workflow
twice from the same checkout and config into two folders (``--output DIR/run-a``, ``run-b``),
then reports, from the two merged tables alone:

- per point, run B's figure / run A's (the method's pooled figure, replicates.py), summarised
  as the range and the share of points beyond 5%;
- the PyTorch/TensorFlow verdicts (statistics.point_ratios) of both runs: the share of points
  whose verdict agrees (the same clear winner, or unclear in both), and the points that are
  clear in opposite directions (the failure a verdict must never have);
- the canary (conditions.canary_ms): whether normalising each replicate's figure by the canary
  measured around its points, or leaving out points whose canary moved by more than 10%,
  narrows the A/A spread (it is kept in the method only if it does);
- the ratio's repeatability (the share of points whose PyTorch/TensorFlow ratio repeats within
  10%) and the intervals' coverage: how often one run's ratio lies inside the other's 95%
  interval, both ways, overall and per pair of modes, and the same had the interval between
  processes been the hierarchical bootstrap's (the alternative weighed against Welch's t);
- per run, where its time went (tables/breakdown.py) and the share of it that produced reported
  figures, the points run again or left disturbed, the host's steal time and the canary;
- compare_runs from run A to run B (an A/A pair should show no change, equivalent or
  undecided, at nearly every point and exit 0): with the machine band as it is (the run's
  canary and each point's), with the run's canary alone, and without a band.

``--neighbour ON OFF`` disturbs run B on purpose: a busy loop on the last CPU the cells use, busy
for ON seconds of every ON + OFF (a noisy neighbour that comes and goes, as on a shared host).

    .venv/bin/python benchmarks/aa.py --output /tmp/aa            # default grid, twice
    .venv/bin/python benchmarks/aa.py --output /tmp/aa --config 'replicates=1'
    .venv/bin/python benchmarks/aa.py --analyse /tmp/aa/run-a /tmp/aa/run-b   # no new runs
    .venv/bin/python benchmarks/aa.py --output /tmp/aa5 --neighbour 20 60      # B disturbed

Each run's wall time and the load average around it are recorded: the default run's time is
the README's set-up figure. Writes ``aa.json`` in the output folder and prints a summary.
"""
import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)

from duel.cell import contract  # noqa: E402
from duel.host.compare import changes  # noqa: E402
from duel.host.tables import breakdown, replicates, scopes, summary  # noqa: E402
from duel.host.verdicts import pairs  # noqa: E402
from duel.host.verdicts import statistics  # noqa: E402

IDENTITY = replicates.POINT_IDENTITY
CANARY_MOVED = 1.10


def run_workflow(folder, extra_config, configfile, checkout=CHECKOUT):
    """One real run of the workflow into ``folder``; returns wall seconds and load averages.
    ``checkout``: whose Snakefile and code run (another commit's worktree: its package first
    on the path, so the method measured is that commit's)."""
    os.makedirs(folder, exist_ok=True)
    command = [sys.executable, "-m", "snakemake", "-s", os.path.join(checkout, "Snakefile"),
               "--directory", folder, "--cores", "all"]
    if configfile:
        command += ["--configfile", configfile]
    if extra_config:
        command += ["--config"] + list(extra_config)
    environment = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(checkout), "scripts"))
    load_before = os.getloadavg()
    started = time.time()
    with open(os.path.join(folder, "snakemake.log"), "w") as log:
        subprocess.run(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, check=True,
                       env=environment)
    return {"wall_s": time.time() - started, "load_before": load_before,
            "load_after": os.getloadavg()}


def busy_neighbour(cpu, on_s, off_s):
    """Keep ``cpu`` busy for ``on_s`` seconds of every ``on_s + off_s``, until terminated."""
    os.sched_setaffinity(0, {cpu})
    while True:
        until = time.time() + on_s
        while time.time() < until:
            pass
        time.sleep(off_s)


def run_disturbed(folder, extra_config, configfile, on_s, off_s):
    """run_workflow with busy_neighbour on the highest CPU this process may use."""
    cpu = max(os.sched_getaffinity(0))
    neighbour = multiprocessing.Process(target=busy_neighbour, args=(cpu, on_s, off_s),
                                        daemon=True)
    neighbour.start()
    try:
        result = run_workflow(folder, extra_config, configfile)
    finally:
        neighbour.terminate()
        neighbour.join()
    result["neighbour"] = {"cpu": cpu, "busy_s": on_s, "idle_s": off_s}
    return result


def comparison_figures(folder_a, folder_b):
    """compare_runs A -> B: verdict counts and exit status with the machine band (the run's and
    each point's canary), with the run's canary alone, and without a band."""
    base, new = (changes.read_run(folder) for folder in (folder_a, folder_b))
    run_only = [run._replace(points=run.points.assign(canary_ms=np.nan)) for run in (base, new)]
    figures = {}
    for name, (left, right, band) in (("machine_band", (base, new, True)),
                                      ("run_canary_only", (run_only[0], run_only[1], True)),
                                      ("no_machine_band", (base, new, False))):
        result = changes.compare(left, right, machine_band=band)
        counts = result.points["verdict"].value_counts()
        figures[name] = {verdict: int(count) for verdict, count in counts.items()}
        figures[name].update({"of": int(len(result.points)), "exit": result.exit_status,
                              "canary_shift": round(float(result.machine_shift), 3)})
    return figures


def read_run(folder):
    return summary.read_summary(os.path.join(folder, "results", "summary.parquet"))


def run_figures(folder, long_frame, wall_s=None):
    """What one run cost and met: the breakdown (tables/breakdown.py), its share of reported
    figures, the points run again or left disturbed, the host's steal time and the canary."""
    times = breakdown.parts(long_frame, breakdown.reference_seconds(
        os.path.join(folder, "results")), wall_s)
    counted = replicates.counted(long_frame)
    canaries = pd.concat([long_frame["canary_before_ms"], long_frame["canary_after_ms"]]).dropna()
    return {"breakdown_s": {row["part"]: round(float(row["seconds"]), 1)
                            for _, row in times.iterrows()},
            "reported_share": round(breakdown.reported_share(times), 3),
            "rows": int(len(long_frame)), "points_counted": int(len(counted)),
            "points_run_again": int((counted["attempt"].fillna(1) > 1).sum()),
            "points_remeasured": int((counted["remeasure"].fillna(0) > 0).sum())
            if "remeasure" in counted.columns else None,
            "rows_flagged": int(long_frame["disturbed"].notna().sum()),
            "points_left_disturbed": int(counted["disturbed"].notna().sum()),
            "steal_s": round(float(long_frame["steal_ms"].fillna(0).sum()) / 1000.0, 2),
            "other_cpu_s": round(float(long_frame["other_cpu_ms"].fillna(0).sum()) / 1000.0, 2),
            "canary_ms": {"min": float(canaries.min()) if len(canaries) else None,
                          "median": float(canaries.median()) if len(canaries) else None,
                          "max": float(canaries.max()) if len(canaries) else None}}


def bootstrap_figures(folder_a, folder_b, pair, min_effect):
    """Coverage, both ways, and verdict agreement had the intervals between processes been the
    hierarchical bootstrap's (statistics.bootstrap_ratio over the replicates' samples): the
    interval the judge's Welch's t is weighed against."""
    def paired(folder):
        return pairs.framework_ratios(scopes.prepared(summary.with_reported(
            read_run(folder))), carry=["replicate_samples"])
    both = paired(folder_a).merge(paired(folder_b), on=pair, suffixes=("_a", "_b"))
    both = both.dropna(subset=["ratio_a", "ratio_b"])
    inside, verdicts = {"a": [], "b": []}, {"a": [], "b": []}
    for _, row in both.iterrows():
        for own, other in (("a", "b"), ("b", "a")):
            low, high = statistics.bootstrap_ratio(
                list(row["replicate_samples_pt_" + own]),
                list(row["replicate_samples_tf_" + own]),
                contract.reported_statistic(row["method"]))
            inside[own].append(low <= row["ratio_" + other] <= high)
            verdicts[own].append(statistics.verdict(row["ratio_" + own], low, high, min_effect,
                                                    "PT", "TF")[1])
    return {"points": int(len(both)), "b_in_a": float(np.mean(inside["a"])),
            "a_in_b": float(np.mean(inside["b"])),
            "agree_share": float(np.mean([x == y for x, y in zip(verdicts["a"], verdicts["b"])])),
            "clear_a": int(sum(v in ("PT", "TF") for v in verdicts["a"])),
            "clear_b": int(sum(v in ("PT", "TF") for v in verdicts["b"]))}


def coverage(ratios_a, ratios_b, pair):
    """How often one run's ratio falls inside the other's 95% interval, both ways, overall and
    per pair of modes: a calibrated interval holds a rerun's ratio about that often or more
    (a rerun's own noise adds to it, so somewhat less is expected)."""
    both = ratios_a[pair + ["ratio", "ci_low", "ci_high"]].merge(
        ratios_b[pair + ["ratio", "ci_low", "ci_high"]], on=pair, suffixes=("_a", "_b"))
    both = both.dropna(subset=["ci_low_a", "ci_low_b"])
    inside = lambda ratio, low, high: (both[low] <= both[ratio]) & (both[ratio] <= both[high])
    both["b_in_a"] = inside("ratio_b", "ci_low_a", "ci_high_a")
    both["a_in_b"] = inside("ratio_a", "ci_low_b", "ci_high_b")
    result = {"points": int(len(both)), "b_in_a": float(both["b_in_a"].mean()),
              "a_in_b": float(both["a_in_b"].mean()), "by_pair": {}}
    counts = ratios_a[pair + ["replicates_pt", "replicates_tf"]].merge(
        ratios_b[pair + ["replicates_pt", "replicates_tf"]], on=pair, suffixes=("_a", "_b"))
    counts = counts.merge(both[pair], on=pair)
    result["calibrated"] = {
        "b_in_a": calibrated_coverage(counts[["replicates_pt_a", "replicates_tf_a",
                                              "replicates_pt_b", "replicates_tf_b"]].to_numpy()),
        "a_in_b": calibrated_coverage(counts[["replicates_pt_b", "replicates_tf_b",
                                              "replicates_pt_a", "replicates_tf_a"]].to_numpy())}
    for (mode_pt, mode_tf), group in both.groupby(["mode_pt", "mode_tf"]):
        result["by_pair"]["%s/%s" % (mode_pt, mode_tf)] = {
            "points": int(len(group)), "b_in_a": float(group["b_in_a"].mean()),
            "a_in_b": float(group["a_in_b"].mean())}
    return result


def calibrated_coverage(counts, draws=4000, seed=0):
    """How often a rerun's ratio would fall inside the first run's 95% interval were the
    intervals exactly right: per point, its processes a side in each run (rows of (PyTorch,
    TensorFlow) in the first run, then in the rerun), log figures drawn from one normal
    distribution per side (the judge's model), the first run's Welch's t interval
    (statistics.welch_ratio) against the rerun's ratio; the mean over the points."""
    generator = np.random.default_rng(seed)
    shares = []
    for pt_a, tf_a, pt_b, tf_b in np.asarray(counts, dtype=int):
        inside = 0
        for _ in range(draws):
            sides = [np.exp(generator.standard_normal(n)) for n in (pt_a, tf_a, pt_b, tf_b)]
            first = float(np.exp(np.log(sides[0]).mean() - np.log(sides[1]).mean()))
            again = float(np.exp(np.log(sides[2]).mean() - np.log(sides[3]).mean()))
            low, high = statistics.welch_ratio(sides[0], sides[1], first)
            inside += low <= again <= high
        shares.append(inside / draws)
    return float(np.mean(shares)) if shares else None


def canary_figures(long_frame):
    """Per point, each ok replicate's figure divided by its canary (the mean of before/after),
    pooled like the figure, and whether any replicate's canary moved by more than 10%."""
    rows = []
    ok = replicates.counted(long_frame)
    ok = ok[ok["status"] == "ok"]
    for keys, group in ok.groupby(IDENTITY, sort=False, dropna=False):
        statistic = contract.reported_statistic(group["method"].iloc[0])
        canary = (group["canary_before_ms"] + group["canary_after_ms"]) / 2.0
        moved = np.maximum(group["canary_before_ms"], group["canary_after_ms"]) / np.minimum(
            group["canary_before_ms"], group["canary_after_ms"])
        normalised = group[statistic].astype(float) / canary.astype(float)
        pooled = float(np.median(normalised)) if statistic == "median" else float(
            np.average(normalised, weights=group["n_samples"]))
        record = dict(zip(IDENTITY, keys))
        record.update(normalised=pooled, canary_moved=bool((moved > CANARY_MOVED).any()))
        rows.append(record)
    return pd.DataFrame(rows)


def spread(ratios):
    ratios = np.asarray([value for value in ratios if value == value], dtype=float)
    if not ratios.size:
        return {}
    deviation = np.abs(np.log(ratios))
    return {"points": int(ratios.size), "min": float(ratios.min()), "max": float(ratios.max()),
            "median_abs_change": float(np.exp(np.median(deviation)) - 1),
            "share_beyond_5pct": float(np.mean(deviation > np.log(1.05)))}


def decision_figures(ratios_a, ratios_b, pair):
    """The three decisions (statistics.decision) of both runs: per run how many points are
    decided (faster either way, or equivalent) and the median width of their intervals (high /
    low); among the points decided in both, how many agree, and the contradictions: faster in
    opposite directions (reversed), or faster in one and equivalent in the other."""
    named = []
    for ratios in (ratios_a, ratios_b):
        frame = ratios[pair + ["ratio", "ci_low", "ci_high", "verdict"]].copy()
        frame["decision"] = statistics.decisions(ratios)
        frame["said"] = [verdict if decided == statistics.FASTER else decided
                         for verdict, decided in zip(frame["verdict"], frame["decision"])]
        named.append(frame)
    both = named[0].merge(named[1], on=pair, suffixes=("_a", "_b"))
    decided = [statistics.FASTER, statistics.EQUIVALENT]
    in_both = both[both["decision_a"].isin(decided) & both["decision_b"].isin(decided)]
    faster_both = in_both[(in_both["decision_a"] == statistics.FASTER)
                          & (in_both["decision_b"] == statistics.FASTER)]
    result = {"points": int(len(both)),
              "decided_in_both": int(len(in_both)),
              "agree_in_both": int((in_both["said_a"] == in_both["said_b"]).sum()),
              "reversed": int((faster_both["said_a"] != faster_both["said_b"]).sum()),
              "faster_against_equivalent": int((in_both["decision_a"]
                                                != in_both["decision_b"]).sum())}
    for name, frame in zip(("a", "b"), named):
        counts = frame["decision"].value_counts()
        width = (frame["ci_high"] / frame["ci_low"]).astype(float)
        result[name] = dict((decision, int(counts.get(decision, 0)))
                            for decision in statistics.DECISIONS)
        result[name]["decided"] = int(sum(counts.get(decision, 0) for decision in decided))
        result[name]["median_interval_width"] = float(width.median()) if width.notna().any() \
            else None
    return result


def analyse(folder_a, folder_b, min_effect=statistics.MIN_EFFECT):
    long_a, long_b = read_run(folder_a), read_run(folder_b)
    a, b = summary.with_reported(long_a), summary.with_reported(long_b)
    keys = IDENTITY
    points = a[keys + ["reported_ms", "replicates"]].merge(
        b[keys + ["reported_ms"]], on=keys, suffixes=("_a", "_b"))
    points["ratio"] = points["reported_ms_b"] / points["reported_ms_a"]
    result = {"replicates": int(a["replicates"].min()), "figures": spread(points["ratio"])}

    if {"canary_before_ms", "canary_after_ms"} <= set(long_a.columns) and \
            long_a["canary_before_ms"].notna().any():
        canary = canary_figures(long_a).merge(canary_figures(long_b), on=keys,
                                              suffixes=("_a", "_b"))
        canary["ratio"] = canary["normalised_b"] / canary["normalised_a"]
        steady = canary[~(canary["canary_moved_a"] | canary["canary_moved_b"])]
        steady = steady.merge(points[keys + ["ratio"]], on=keys, suffixes=("_norm", ""))
        result["canary"] = {"normalised": spread(canary["ratio"]),
                            "steady_points_only": spread(steady["ratio"]),
                            "points_with_canary_moved": int(len(canary) - len(steady))}

    ratios_a = statistics.point_ratios(a, min_effect=min_effect)
    ratios_b = statistics.point_ratios(b, min_effect=min_effect)
    pair = pairs.SHOWN.keys + ["model", "batch_size", "seq_len"]
    verdicts = ratios_a[pair + ["ratio", "verdict", "clear"]].merge(
        ratios_b[pair + ["ratio", "verdict", "clear"]], on=pair, suffixes=("_a", "_b"))
    compared = verdicts[verdicts["clear_a"].notna() & verdicts["clear_b"].notna()]
    winners = lambda column: [text if text in ("PyTorch faster", "TensorFlow faster") else
                              "unclear" for text in compared[column]]
    agree = [x == y for x, y in zip(winners("verdict_a"), winners("verdict_b"))]
    opposite = [(x, y) for x, y in zip(winners("verdict_a"), winners("verdict_b"))
                if "unclear" not in (x, y) and x != y]
    result["verdicts"] = {
        "compared": int(len(compared)), "agree": int(sum(agree)),
        "agree_share": float(np.mean(agree)) if agree else None,
        "clear_in_opposite_directions": len(opposite),
        "clear_a": int((compared["clear_a"] == "yes").sum()),
        "clear_b": int((compared["clear_b"] == "yes").sum()),
        "pt_tf_ratio_b_over_a": spread(compared["ratio_b"] / compared["ratio_a"]),
        "ratio_within_10pct": float(np.mean(np.abs(np.log(
            compared["ratio_b"].astype(float) / compared["ratio_a"].astype(float)))
            <= np.log(1.10))) if len(compared) else None,
    }
    result["decisions"] = decision_figures(ratios_a, ratios_b, pair)
    result["coverage"] = coverage(ratios_a, ratios_b, pair)
    result["bootstrap_interval"] = bootstrap_figures(folder_a, folder_b, pair, min_effect)
    result["compare_runs_a_b"] = comparison_figures(folder_a, folder_b)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="folder for run-a, run-b and aa.json")
    parser.add_argument("--configfile", help="a config file merged over config/config.yaml")
    parser.add_argument("--config", nargs="*", default=[], help="key=value overrides")
    parser.add_argument("--analyse", nargs=2, metavar=("RUN_A", "RUN_B"),
                        help="analyse two finished run folders instead of running")
    parser.add_argument("--neighbour", nargs=2, type=float, metavar=("ON_S", "OFF_S"),
                        help="disturb run B: a busy loop on the last CPU, ON_S of every "
                             "ON_S + OFF_S seconds")
    args = parser.parse_args(argv)
    if args.analyse:
        folder_a, folder_b = args.analyse
        runs = {}
        output = args.output or os.path.dirname(os.path.abspath(folder_a))
        os.makedirs(output, exist_ok=True)
    else:
        if not args.output:
            parser.error("--output is required unless --analyse is given")
        folder_a, folder_b = (os.path.join(args.output, name) for name in ("run-a", "run-b"))
        runs = {"a": run_workflow(folder_a, args.config, args.configfile)}
        runs["b"] = (run_disturbed(folder_b, args.config, args.configfile, *args.neighbour)
                     if args.neighbour else run_workflow(folder_b, args.config, args.configfile))
        output = args.output
    result = analyse(folder_a, folder_b)
    for name, folder in (("a", folder_a), ("b", folder_b)):
        runs.setdefault(name, {}).update(run_figures(
            folder, read_run(folder), runs.get(name, {}).get("wall_s")))
    result["runs"] = runs
    result["cpu"] = read_run(folder_a)["cpu_model"].iloc[0]
    with open(os.path.join(output, "aa.json"), "w") as handle:
        json.dump(result, handle, indent=2)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
