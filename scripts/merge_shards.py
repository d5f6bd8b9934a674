"""Snakemake script: merge every shard into results/summary.{parquet,csv,xlsx} and csv-2019/."""
import os
import sys

from duel.host.plan import layout
from duel.host.provenance import runs
from duel.host.render import outcome, spreadsheet
from duel.host.tables import breakdown, published_2019, summary


def main(shards, parquet_path, csv_path, xlsx_path, csv_2019_folder, min_effect, lacking=()):
    """``lacking``: the skipped rows of the cells an era lacks (planner.lacking_rows), which no
    process ran."""
    frame = summary.read_shards(shards)  # the long table: every replicate's points, migrated
    if lacking:
        frame = summary.with_rows(frame, lacking)
    points = summary.with_reported(frame)  # the point table: replicates pooled, made once
    summary.write_outputs(frame, parquet_path, csv_path)
    results_dir = os.path.dirname(parquet_path)
    spreadsheet.write_workbook(frame, xlsx_path, min_effect, points,
                               breakdown.reference_seconds(results_dir))
    published_2019.write_2019_csvs(points, csv_2019_folder)
    print("merged %d shards" % len(shards))
    for line in outcome.lines(frame):
        print(line)
    missing = runs.shards_without_manifest(shards, results_dir)
    if missing:  # old runs merge as before; only a rebuild needs the manifest
        print("%d shards have no run manifest (%s/*/manifest.json; made before runs recorded "
              "one), so `duel rebuild` cannot rebuild them: %s"
              % (len(missing), layout.at(layout.RUNS), ", ".join(missing)))


def explain(error, log, console):
    """A shard that cannot be read: its line (file, problem, what to do) in the log and on the
    console, no traceback; the job fails."""
    for stream in (log, console):
        stream.write("%s\n" % error)
        stream.flush()
    return 1


if __name__ == "__main__" and "snakemake" in globals():
    with open(snakemake.log[0], "w") as log:  # noqa: F821
        console = sys.stderr
        sys.stdout = sys.stderr = log
        try:
            main(
                list(snakemake.input.shards),  # noqa: F821
                snakemake.output.parquet,  # noqa: F821
                snakemake.output.csv,  # noqa: F821
                snakemake.output.xlsx,  # noqa: F821
                snakemake.output.csv_2019,  # noqa: F821
                snakemake.params.min_effect,  # noqa: F821
                snakemake.params.lacking,  # noqa: F821
            )
        except summary.ShardError as error:
            sys.exit(explain(error, log, console))
