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
        "results/logs/open_points.log",
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
        parquet="results/summary.parquet",
        csv="results/summary.csv",
        xlsx=report(
            "results/summary.xlsx",
            caption="../report/summary.rst",
            category="Data",
        ),
        csv_2019=directory("results/csv-2019"),
    log:
        "results/logs/merge_shards.log",
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        min_effect=config["min_effect"],
        lacking=planner.lacking_rows(config, CHECKOUT),
    script:
        "../scripts/merge_shards.py"
