"""Snakemake script: every chart of a merged run, one folder per kind (results/plots/)."""
import sys

import pandas as pd

from duel.host.render import chart_kinds
from duel.host.render.plots import draw
from duel.host.tables import summary


def read_ratios(path):
    """The statistics rule's per-point table, with 'clear' and 'decision' kept as text (empty
    where there is none)."""
    return pd.read_csv(path, dtype={"clear": object, "decision": object, "verdict": object,
                                    "precision": object})


def main(parquet_path, ratios_csv, folders):
    frame = summary.read_summary(parquet_path)
    written = draw.draw_all(frame, read_ratios(ratios_csv), folders)
    for kind, paths in written.items():
        print("%s: %d files in %s" % (kind, len(paths), folders[kind]))


if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        sys.stdout = sys.stderr = log
        main(
            snakemake.input.parquet,  # noqa: F821
            snakemake.input.ratios,  # noqa: F821
            dict((kind, getattr(snakemake.output, kind)) for kind in chart_kinds.KINDS),  # noqa: F821
        )
