# Compare this run with an earlier one (config key baseline): what got faster or slower, how
# sure, and what changed in between (as `duel compare`), in results/comparison/.
from duel.host.compare import changes

# The baseline's summary, read at planning, so a bad path stops the run before any job starts.
try:
    BASELINE = changes.baseline_summary(
        config.get("baseline"), "results/summary.parquet"
    )
except changes.CompareError as error:
    raise WorkflowError("config key baseline: %s" % error)
# What `rule all` builds when the config names a baseline.
COMPARE_OUTPUTS = ["results/comparison/comparison.md"] if BASELINE else []


localrules:
    compare_baseline,


rule compare_baseline:
    input:
        parquet="results/summary.parquet",
        baseline=BASELINE or [],
    output:
        markdown="results/comparison/comparison.md",
        csv=report(
            "results/comparison/comparison.csv",
            caption="../report/comparison-points.rst",
            category="Data",
        ),
        environment="results/comparison/environment.csv",
        xlsx=report(
            "results/comparison/comparison.xlsx",
            caption="../report/comparison-points.rst",
            category="Data",
        ),
        chart=report(
            "results/comparison/comparison.png",
            caption="../report/comparison.rst",
            category="At a glance",
            subcategory="Since the baseline",
        ),
        svg="results/comparison/comparison.svg",
    log:
        "results/logs/compare_baseline.log",
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        ignore=config["baseline_ignore"],
        min_effect=config["min_effect"],
    script:
        "../scripts/compare_baseline.py"
