# What a person reads: statistics, charts and the environment, all made from the
# merged table, and gathered with their captions by `snakemake --report results/report.html`.


localrules:
    compute_statistics,
    make_plots,
    describe_environment,


rule compute_statistics:
    input:
        parquet="results/summary.parquet",
    output:
        ratios=report(
            "results/statistics/ratios.csv",
            caption="../report/ratios.rst",
            category="Data",
        ),
        pairs="results/statistics/pairs.csv",
        headline="results/statistics/headline.csv",
        noise="results/statistics/noise.csv",
        html=report(
            "results/statistics/statistics.html",
            caption="../report/statistics.rst",
            category="At a glance",
            subcategory="How sure is each difference",
        ),
    log:
        "results/logs/compute_statistics.log",
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        min_effect=config["min_effect"],
    script:
        "../scripts/compute_statistics.py"


rule make_plots:
    input:
        parquet="results/summary.parquet",
        ratios="results/statistics/ratios.csv",
    output:
        **{kind: plot_output(kind) for kind in chart_kinds.KINDS},
    log:
        "results/logs/make_plots.log",
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    script:
        "../scripts/make_plots.py"


rule describe_environment:
    input:
        parquet="results/summary.parquet",
        locks=JOBS.era_lock_files,
    output:
        html=report(
            "results/environment.html",
            caption="../report/environment.rst",
            category="Data",
        ),
    log:
        "results/logs/describe_environment.log",
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        eras=["%s-%s" % pair for pair in JOBS.era_devices],
    script:
        "../scripts/describe_environment.py"
