# What a person reads: statistics, charts and the environment, all made from the
# merged table, and gathered with their captions by `snakemake --report results/report.html`.


localrules:
    compute_statistics,
    make_plots,
    describe_environment,


rule compute_statistics:
    input:
        parquet=SUMMARY,
    output:
        ratios=report(
            layout.at(layout.RATIOS),
            caption="../report/ratios.rst",
            category="Data",
        ),
        pairs=layout.at(layout.PAIRS),
        headline=layout.at(layout.HEADLINE),
        noise=layout.at(layout.NOISE),
        generation=layout.at(layout.GENERATION),
        html=report(
            layout.at(layout.STATISTICS_PAGE),
            caption="../report/statistics.rst",
            category="At a glance",
            subcategory="How sure is each difference",
        ),
    log:
        layout.log("compute_statistics.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        min_effect=config["min_effect"],
    script:
        "../scripts/compute_statistics.py"


rule make_plots:
    input:
        parquet=SUMMARY,
        ratios=layout.at(layout.RATIOS),
    output:
        **{kind: plot_output(kind) for kind in chart_kinds.KINDS},
    log:
        layout.log("make_plots.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    script:
        "../scripts/make_plots.py"


rule describe_environment:
    input:
        parquet=SUMMARY,
        locks=JOBS.era_lock_files,
    output:
        html=report(
            layout.at(layout.ENVIRONMENT),
            caption="../report/environment.rst",
            category="Data",
        ),
    log:
        layout.log("describe_environment.log"),
    conda:
        "../envs/current-cpu.yaml"
    threads: 1
    params:
        eras=["%s-%s" % pair for pair in JOBS.era_devices],
    script:
        "../scripts/describe_environment.py"
