"""The Snakemake workflow's own Python (rules/*.smk call it): what each job asks while it is
planned (jobs), and a run's start and end (events)."""
