"""Snakemake script: the statistics of a merged run (results/statistics/)."""
import sys

from duel.host.render import pages
from duel.host.tables import summary
from duel.host.verdicts import generation, statistics


def main(parquet_path, ratios_csv, pairs_csv, headline_csv, noise_csv, html_path, min_effect,
         generation_csv):
    long_frame = summary.read_summary(parquet_path)
    points = summary.with_reported(long_frame)  # replicates combined once
    ratios = statistics.point_ratios(points, min_effect=min_effect)
    pairs = statistics.pair_summary(ratios, points)
    headline = statistics.headline(points)
    noise = statistics.noise_table(points)
    ratios.to_csv(ratios_csv, index=False)
    pairs.to_csv(pairs_csv, index=False)
    headline.to_csv(headline_csv, index=False)
    noise.to_csv(noise_csv, index=False)
    generation.generation_verdict(long_frame, min_effect).to_csv(generation_csv, index=False)
    with open(html_path, "w") as handle:
        handle.write(pages.statistics_page(ratios, pairs, headline, noise, min_effect))
    print("%d paired points; %s" % (len(ratios), ratios["verdict"].value_counts().to_dict()))


if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        sys.stdout = sys.stderr = log
        main(
            snakemake.input.parquet,  # noqa: F821
            snakemake.output.ratios,  # noqa: F821
            snakemake.output.pairs,  # noqa: F821
            snakemake.output.headline,  # noqa: F821
            snakemake.output.noise,  # noqa: F821
            snakemake.output.html,  # noqa: F821
            snakemake.params.min_effect,  # noqa: F821
            snakemake.output.generation,  # noqa: F821
        )
