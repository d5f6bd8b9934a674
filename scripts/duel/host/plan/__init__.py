"""Config to cells, or one refusal, while Snakemake parses: config coercion, the cells, the
runner, drift and input checks, and what each job costs (cores, walltime, memory, disk)."""
