"""Snakemake script: build one era's virtual environment from its lock file (stacks/eras.py)."""
import os

from duel.host.stacks import eras

if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        eras.ensure_env(
            snakemake.wildcards.era,  # noqa: F821
            snakemake.input.lock,  # noqa: F821
            os.path.dirname(snakemake.output.marker),  # noqa: F821
            log,
        )
