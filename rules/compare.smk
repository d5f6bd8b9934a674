# Compare this run with an earlier one (config key baseline): what got faster or slower, how
# sure, and what changed in between (as `duel compare`), in results/comparison/.
from duel.host.compare import changes

# The baseline's summary, read at planning, so a bad path stops the run before any job starts.
try:
    BASELINE = changes.baseline_summary(config.get("baseline"), SUMMARY)
except changes.CompareError as error:
    raise WorkflowError("config key baseline: %s" % error)
# What `rule all` builds when the config names a baseline.
COMPARE_OUTPUTS = [layout.at(layout.COMPARISON, "comparison.md")] if BASELINE else []


localrules:
    compare_baseline,


rule compare_baseline:
    input:
        parquet=SUMMARY,
        baseline=BASELINE or [],
    output:
        markdown=layout.at(layout.COMPARISON, "comparison.md"),
        csv=report(
            layout.at(layout.COMPARISON, "comparison.csv"),
            caption="../report/comparison-points.rst",
            category="Data",
        ),
        environment=layout.at(layout.COMPARISON, "environment.csv"),
        xlsx=report(
            layout.at(layout.COMPARISON, "comparison.xlsx"),
            caption="../report/comparison-points.rst",
            category="Data",
        ),
        chart=report(
            layout.at(layout.COMPARISON, "comparison.png"),
            caption="../report/comparison.rst",
            category="At a glance",
            subcategory="Since the baseline",
        ),
        svg=layout.at(layout.COMPARISON, "comparison.svg"),
    log:
        layout.log("compare_baseline.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        ignore=config["baseline_ignore"],
        min_effect=config["min_effect"],
    script:
        "../scripts/compare_baseline.py"
