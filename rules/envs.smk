# Era environments: built once from the era's lock file, then reused by every cell of that era.


localrules:
    build_era_env,


rule build_era_env:
    input:
        lock=era_lock,
    output:
        marker=os.path.join(ERA_ENVS_DIR, "{era}", "{device}", eras.MARKER),
    log:
        "results/logs/envs/{era}-{device}.log",
    conda:
        "../envs/current-cpu.yaml"
    script:
        "../scripts/build_era_env.py"
