# Era environments: built once from the era's lock file, then reused by every cell of that era.
# Each lives in a folder named by its lock file's hash (eras.keyed_prefix), so an old run's
# environment being rebuilt (`duel rebuild`) never replaces today's.


localrules:
    build_era_env,


rule build_era_env:
    input:
        lock=JOBS.era_lock,
    output:
        marker=os.path.join(JOBS.era_envs_dir, eras.ENV_PATTERN, eras.MARKER),
    log:
        layout.log("envs/{era}-{device}-{lock_key}.log"),
    conda:
        "../envs/current-cpu.yaml"
    script:
        "../scripts/build_era_env.py"
