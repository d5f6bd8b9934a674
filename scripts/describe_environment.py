"""Snakemake script: the environment of every cell and the eras' lock files, as one page."""
import os
import sys

from duel.host.provenance import runs
from duel.host.render import pages
from duel.host.tables import summary


def main(parquet_path, lock_files, html_path):
    frame = summary.read_summary(parquet_path)
    folder = os.path.dirname(html_path)
    manifests = [os.path.relpath(path, folder) for path, _ in runs.manifests(folder)]
    with open(html_path, "w") as handle:
        handle.write(pages.environment_page(frame, lock_files, manifests))


if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        sys.stdout = sys.stderr = log
        main(
            snakemake.input.parquet,  # noqa: F821
            list(zip(snakemake.params.eras, snakemake.input.locks)),  # noqa: F821
            snakemake.output.html,  # noqa: F821
        )
