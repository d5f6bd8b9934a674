"""Snakemake script: after the first rounds, the verdicts still open and the extra processes
that measure their points again (duel/host/verdicts/settle.py)."""
import sys

from duel.cell import files
from duel.host.tables import summary
from duel.host.verdicts import settle


def main(shards, output, replicates, max_replicates, min_effect):
    rows = summary.read_shards(shards)
    record = settle.plan(summary.with_reported(rows), replicates, max_replicates, min_effect,
                         long_frame=rows)
    files.write_json(output, record, sort_keys=True)
    print("\n".join(settle.lines(record)) or "no verdict undecided")


if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        sys.stdout = sys.stderr = log
        main(
            list(snakemake.input.shards),  # noqa: F821
            snakemake.output[0],  # noqa: F821
            snakemake.params.replicates,  # noqa: F821
            snakemake.params.max_replicates,  # noqa: F821
            snakemake.params.min_effect,  # noqa: F821
        )
