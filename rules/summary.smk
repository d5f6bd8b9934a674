# Merge every planned shard into the summary table and spreadsheet; with settling, first the
# verdicts still open after the first rounds (their points run again: rules/cells.smk).


localrules:
    open_points,
    merge_shards,


checkpoint open_points:
    input:
        shards=JOBS.base_shard_paths(),
    output:
        jobs.OPEN_POINTS,
    log:
        layout.log("open_points.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        replicates=JOBS.replicates,
        max_replicates=JOBS.max_replicates,
        min_effect=config["min_effect"],
    script:
        "../scripts/open_points.py"


rule merge_shards:
    input:
        shards=merged_shards,
    output:
        parquet=SUMMARY,
        csv=layout.at(layout.SUMMARY_CSV),
        xlsx=report(
            layout.at(layout.SPREADSHEET),
            caption="../report/summary.rst",
            category="Data",
        ),
        csv_2019=directory(layout.at(layout.CSV_2019)),
    log:
        layout.log("merge_shards.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        min_effect=config["min_effect"],
        lacking=planner.lacking_rows(config, CHECKOUT),
    script:
        "../scripts/merge_shards.py"
