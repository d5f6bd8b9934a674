"""How a bisection's answer looks (duel bisect): its lines on screen, its table of releases and
its chart of release against day, for its folder, `duel show` and the published site."""
import os

import pandas as pd

FILE, TABLE, CHART = "bisect.json", "bisect.csv", "bisect.png"  # in a bisection's folder
TABLE_COLUMNS = ["version", "date", "era", "status", "figure_ms", "low_ms", "high_ms",
                 "processes", "python", "transformers", "other", "numpy", "released", "run_id",
                 "reason"]


def direction(ratio):
    return "faster" if ratio < 1 else "slower"


def finding_line(finding, versions):
    """One finding in words: where, which way, by how much, and what else moved."""
    before, after = versions[finding["before"]], versions[finding["after"]]
    if finding["kind"] == "step":
        head = "step at %s -> %s" % (before, after)
    else:
        head = "unresolved between %s and %s (%s)" % (before, after, finding["reason"])
    line = "%s: %s, time ratio %.2f [%.2f, %.2f]" % (
        head, direction(finding["ratio"]), finding["ratio"], finding["low"], finding["high"])
    tangled = finding.get("confounded") or []
    if tangled:
        line += "; %s moved too, and these runs cannot tell them from the release" % (
            " and ".join(tangled))
    return line


def lines(record):
    """The answer on screen: what was bisected, the total change, each finding, the cost."""
    versions = [one["version"] for one in record["releases"]]
    total = record["total"]
    head = "%s %s %s/%s %s on %s: %s -> %s" % (
        record["framework"], record["mode"], record["model"], "%dx%d" % (
            record["batch_size"], record["seq_len"]), record["method"], record["machine"],
        versions[0], versions[-1])
    said = [head, "  in all: %s, time ratio %.2f [%.2f, %.2f]%s" % (
        direction(total["ratio"]), total["ratio"], total["low"], total["high"],
        "" if total["clear"] else " (not a clear change: nothing to bisect)")]
    for finding in record["findings"]:
        said.append("  " + finding_line(finding, versions))
        for moved in finding.get("coincides") or []:
            said.append("    with it: " + moved)
    if total["clear"] and not record["findings"]:
        said.append("  no step found")
    measured = [one for one in record["releases"] if one["status"] == "measured"]
    skipped = [one for one in record["releases"] if one["status"] == "skipped"]
    said.append("  %d of %d releases measured, %d skipped; %d environment%s built; %s" % (
        len(measured), len(versions), len(skipped), record["environments_built"],
        "" if record["environments_built"] == 1 else "s", minutes(record["seconds"])))
    for one in skipped:
        said.append("  skipped %s: %s" % (one["version"], one["reason"]))
    return said


def minutes(seconds):
    return "%.1f min" % (seconds / 60.0) if seconds is not None else "time unknown"


def table(record):
    frame = pd.DataFrame(record["releases"])
    return frame.reindex(columns=TABLE_COLUMNS)


def chart(record, path):
    """Release against its day: each measured release's figure with its interval, the steps
    marked; a release not measured has no mark."""
    import matplotlib  # here, not at the top: `duel show` reads answers without drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    frame = table(record)
    measured = frame[frame["status"] == "measured"].copy()
    measured["day"] = pd.to_datetime(measured["date"])
    figure, axis = plt.subplots(figsize=(9, 4.5))
    low = measured["figure_ms"] - measured["low_ms"]
    high = measured["high_ms"] - measured["figure_ms"]
    axis.errorbar(measured["day"], measured["figure_ms"], yerr=[low.fillna(0), high.fillna(0)],
                  fmt="o-", capsize=4, color="#1f77b4")
    for place, (_, row) in enumerate(measured.iterrows()):  # above and below in turn
        axis.annotate(row["version"], (row["day"], row["figure_ms"]), textcoords="offset points",
                      xytext=(0, 9 if place % 2 == 0 else -14), ha="center", fontsize=8)
    days = dict(zip(frame["version"], pd.to_datetime(frame["date"])))
    versions = list(frame["version"])
    for finding in record["findings"]:
        start, end = days[versions[finding["before"]]], days[versions[finding["after"]]]
        axis.axvspan(start, end, alpha=0.15,
                     color="#2ca02c" if finding["ratio"] < 1 else "#d62728")
    axis.set_ylabel("ms per call (%s, 95%% interval over processes)" % record["method"])
    axis.set_xlabel("release day")
    axis.set_title("%s %s, %s %dx%d on %s" % (
        record["framework"], record["mode"], record["model"], record["batch_size"],
        record["seq_len"], record["cpu_model"] or record["machine"]), fontsize=10)
    axis.set_ylim(bottom=0)
    figure.autofmt_xdate()
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


