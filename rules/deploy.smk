# Deployment modes (duel/cell/adapters/deployed.py): a model's shared weights exported once to
# its framework's own format, and, for the C/C++ modes, the era's runner built with CMake
# against the era's own wheel (cpp/), cached per era, device, runtime and lock-file hash.
# Both run before the cells that use them; planning refuses these modes where they cannot run.


rule export_artifacts:
    input:
        model_config=JOBS.model_config,
        era_env=JOBS.era_env_marker,
        reference=layout.reference("{era}", "{model}", "reference"),
    output:
        folder=artifact_output(),
    log:
        layout.log("artifacts/{era}/{device}/{artifact}/{model}.log"),
    conda:
        JOBS.era_conda_env
    # Tracing and saving a model is heavy compute: it never runs beside a timing cell.
    threads: JOBS.timing_threads
    resources:
        mem_mb=JOBS.reference_mem_mb,
        runtime=JOBS.reference_runtime_min,
    params:
        launch=JOBS.cell_path,
        python=JOBS.era_python,
        script=EXPORT_ARTIFACTS,
        reference_dir=lambda wildcards, input: os.path.dirname(input.reference),
        grid=JOBS.grid,
        seed=config["seed"],
    shell:
        "{params.launch:q} {params.python:q} {params.script:q} --format {wildcards.artifact:q}"
        " --device {wildcards.device:q} --model-config {input.model_config:q}"
        " --reference-dir {params.reference_dir:q}"
        " --batch-sizes {params.grid[batch_sizes]:q}"
        " --sequence-lengths {params.grid[sequence_lengths]:q}"
        " --seed {params.seed} --threads {threads} --output-dir {output.folder:q}"
        " > {log:q} 2>&1"


rule build_runner:
    input:
        sources=CPP_SOURCES,
        lock=JOBS.era_lock,
        era_env=JOBS.era_env_marker,
    output:
        record=os.path.join(JOBS.runners_dir, deployment.RUNNER_PATTERN),
    log:
        layout.log("runners/{era}-{device}-{runtime}-{lock_key}.log"),
    conda:
        JOBS.era_conda_env
    # Compiling takes the cores it is given: never beside a timing cell.
    threads: JOBS.timing_threads
    params:
        launch=JOBS.cell_path,
        python=JOBS.era_python,
        script=BUILD_RUNNER,
    shell:
        "{params.launch:q} {params.python:q} {params.script:q} --runtime {wildcards.runtime:q}"
        " --record {output.record:q} --log-name {log:q} > {log:q} 2>&1"
