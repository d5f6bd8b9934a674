# Merge every planned shard into the summary table and spreadsheet.


localrules:
    merge_shards,


rule merge_shards:
    input:
        shards=shard_paths(),
    output:
        parquet="results/summary.parquet",
        csv="results/summary.csv",
        xlsx="results/summary.xlsx",
    log:
        "results/logs/merge_shards.log",
    conda:
        ERA_ENV
    threads: 1
    script:
        "../scripts/merge_shards.py"
