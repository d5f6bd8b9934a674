"""Snakemake script: this run compared with the baseline run (results/comparison/)."""
import os
import sys

from duel.host.compare import two_runs

if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        sys.stdout = sys.stderr = log
        status = two_runs.compare_and_write(
            snakemake.input.baseline,  # noqa: F821
            snakemake.input.parquet,  # noqa: F821
            os.path.dirname(snakemake.output.markdown),  # noqa: F821
            snakemake.params.ignore,  # noqa: F821
            snakemake.params.min_effect,  # noqa: F821
        )
        print("exit status for CI would be %d (the rule itself does not fail on it)" % status)
