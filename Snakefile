# Duel: PyTorch vs TensorFlow transformer benchmarks, one job per cell, merged into a summary.
# Run: snakemake --cores all [--configfile config/paper-2019.yaml] [--config key=value ...]
import os

from snakemake.utils import min_version

min_version("9.0")


# The default grid; --configfile / --config override it key by key.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/envs.smk"
include: "rules/deploy.smk"
include: "rules/cells.smk"
include: "rules/summary.smk"
include: "rules/report.smk"
include: "rules/compare.smk"


# The front page of `snakemake --report results/report.html`.
report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        summary_outputs(),
        report_outputs(),
        COMPARE_OUTPUTS,
