# Merge every planned shard into the summary table and spreadsheet.


localrules:
    merge_shards,


rule merge_shards:
    input:
        shards=shard_paths(),
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
    script:
        "../scripts/rules/merge_shards.py"
