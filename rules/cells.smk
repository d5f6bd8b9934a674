# One job per cell: one process builds one model and sweeps its whole grid into one shard.
# Before the cells of a model, one job makes the weights all its cells share and the PyTorch
# eager outputs each point is checked against, and (task training) another makes the model with
# its language-modelling head that training cells start from, and (task generation) another the
# causal language model and its greedy tokens (scripts/duel/cell/reference.py).
# All run in the era's image with runner docker (params.launch: duel/host/stacks/docker_run.py) or
# apptainer (container:, under `snakemake --sdm apptainer`).


rule make_reference:
    input:
        model_config=JOBS.model_config,
        era_env=JOBS.era_env_marker,
    output:
        # reference.json (the inference reference), training.json (the training weights) or
        # generation.json (the generation weights and tokens)
        manifest=layout.REFERENCE_PATTERN,
    log:
        layout.log("reference/{era}/{model}-{weights}.log"),
    # Before any cell, so that the cells' rounds are not split by a model's reference.
    priority: JOBS.reference_priority
    conda:
        JOBS.era_conda_env
    container:
        JOBS.era_container
    # Heavy compute: it takes as many cores as a timing cell, so it never runs beside one.
    threads: JOBS.timing_threads
    resources:
        mem_mb=JOBS.reference_mem_mb,
        runtime=JOBS.reference_runtime_min,
    params:
        launch=JOBS.launcher(record_image=False),
        python=JOBS.era_python,
        script=MAKE_REFERENCE,
        folder=lambda wildcards, output: os.path.dirname(output.manifest),
        what=JOBS.reference_arguments,
        seed=config["seed"],
    shell:
        "{params.launch:q} {params.python:q} {params.script:q}"
        " --model-config {input.model_config:q} {params.what:q} --seed {params.seed}"
        " --threads {threads} --output-dir {params.folder:q} > {log:q} 2>&1"


rule run_cell:
    input:
        model_config=JOBS.model_config,
        era_env=JOBS.era_env_marker,
        reference=JOBS.cell_weights,
        artifacts=JOBS.cell_artifacts,
        runner=JOBS.cell_runner,
        settling=JOBS.settling_input,
    output:
        shard=layout.SHARD_PATTERN,
    log:
        layout.LOG_PATTERN,
    # Interleaved rounds: replicate 1 of every cell before replicate 2 of any (common.smk).
    priority: JOBS.round_priority
    conda:
        JOBS.era_conda_env
    container:
        JOBS.era_container
    # A timing cell takes every core Snakemake may use, so no two cells ever share cores; on a
    # cluster it asks for config cell_threads whole cores (and a GPU for a cuda cell).
    threads: JOBS.timing_threads
    resources:
        mem_mb=JOBS.cell_mem_mb,
        runtime=JOBS.cell_runtime_min,
        gpu=JOBS.cell_gpus,
    params:
        launch=JOBS.launcher(record_image=True),
        python=JOBS.era_python,
        runner=JOBS.era_runner,
        image=JOBS.image_record,
        software=JOBS.software_record,
        reference_dir=lambda wildcards, input: os.path.dirname(input.reference),
        script=RUN_CELL,
        grid=JOBS.grid,
        methods=jobs.joined(JOBS.methods),
        seed=config["seed"],
        tf32="on" if config.get("tf32") else "off",
        learning_rate=config["training"]["learning_rate"],
        new_tokens=config["generation"]["new_tokens"],
        duel=config["duel"],
        timeit=config["timeit"],
        disturbance=config["disturbance"],
        calibrate="on" if config["disturbance"]["calibrate"] else "off",
        fresh_processes=events.FRESH_PROCESSES,
        deployed=JOBS.deployed_arguments,
        points=JOBS.settling_points,
        point_time_limit=config["point_time_limit"],
        # The cores it times with, as a param too: a change of them re-runs the cell (Snakemake
        # re-runs a job whose params changed, not one whose threads did).
        timed_threads=JOBS.timing_threads,
    shell:
        "{params.launch:q} {params.python:q} {params.script:q}"
        " --era {wildcards.era:q} --device {wildcards.device:q}"
        " --framework {wildcards.framework:q} --mode {wildcards.mode:q}"
        " --precision {wildcards.precision:q} --tf32 {params.tf32}"
        " --task {wildcards.task:q} --model-config {input.model_config:q}"
        " --replicate {wildcards.replicate}"
        " --batch-sizes {params.grid[batch_sizes]:q}"
        " --sequence-lengths {params.grid[sequence_lengths]:q}"
        " --methods {params.methods:q} --seed {params.seed} --threads {threads}"
        " --learning-rate {params.learning_rate} --new-tokens {params.new_tokens}"
        " --reference-dir {params.reference_dir:q}"
        " --warmup-calls {params.duel[warmup_calls]} --min-samples {params.duel[min_samples]}"
        " --min-time-s {params.duel[min_time_s]} --max-samples {params.duel[max_samples]}"
        " --max-time-s {params.duel[max_time_s]} --warmup-time-s {params.duel[warmup_time_s]}"
        " --noise-ratio {params.duel[noise_ratio]}"
        " --max-steal-share {params.disturbance[max_steal_share]}"
        " --max-other-share {params.disturbance[max_other_share]}"
        " --max-canary-score {params.disturbance[max_canary_score]}"
        " --calibrate {params.calibrate} --remeasures {params.disturbance[remeasures]}"
        " --attempts {params.disturbance[attempts]}"
        " --fresh-processes {params.fresh_processes:q}"
        " --point-time-limit {params.point_time_limit}"
        " --repeat {params.timeit[repeat]} --number {params.timeit[number]}"
        " --runner {params.runner:q} {params.image:q} {params.software:q} {params.deployed:q}"
        " {params.points:q}"
        " --progress-fd 3 --output {output.shard:q} 3>&2 > {log:q} 2>&1"
