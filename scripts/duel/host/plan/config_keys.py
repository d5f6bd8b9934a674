"""The config's keys as planning reads them, and PlanError, the refusal every check raises.

Before the schema judges a config, old names are translated (renamed_keys) and command-line
strings made numbers and booleans (coerce_command_line_numbers); after, every module reads a
key's default, a folder or a task's grid from here.
"""
import functools
import os
import sys

import yaml

from duel.cell import contract

SCHEMA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "config", "schema",
                      "config.schema.yaml")


@functools.lru_cache(maxsize=None)
def _schema():
    with open(SCHEMA) as handle:
        return yaml.safe_load(handle)


def processes_per_cell(config):
    """Config ``replicates``, else the schema's default: a config that skipped validation (a
    caller's own dict) plans as a validated one would."""
    return config.get("replicates", _schema()["properties"]["replicates"]["default"])


class PlanError(ValueError):
    """The config asks for something this workflow or this machine cannot run."""


def as_list(value):
    """A config value that may be one item or a list, as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _number(item):
    """'3' -> 3, '0.5' -> 0.5, 'true' -> True; anything else unchanged (for the schema to
    judge)."""
    if not isinstance(item, str):
        return item
    if item.strip().lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[item.strip().lower()]
    for kind in (int, float):
        try:
            return kind(item.strip())
        except ValueError:
            pass
    return item


BOOLEAN_KEYS = ("tf32", "keep_artifacts", "accept_drift", "strict")
BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def prepare_config(config, warn=None):
    """What planning does to a config before the schema judges it: old names translated
    (renamed_keys) and command-line strings turned into numbers and booleans."""
    renamed_keys(config, warn or (lambda text: sys.stderr.write("Warning: %s\n" % text)))
    return coerce_command_line_numbers(config)


def renamed_keys(config, warn):
    """The timing method ``timeit`` is also read under its other name ``hf2019`` (the era's):
    that spelling still works, as value of ``method`` and as the key of its settings, with a
    deprecation warning. A key whose meaning changed is refused with what replaced it."""
    if "max_canary_ratio" in (config.get("disturbance") or {}):
        raise PlanError("config key disturbance.max_canary_ratio (the canary over the job's "
                        "fastest) is replaced by disturbance.max_canary_score (the canary in "
                        "robust spreads above its median on this host, default 3.5): remove it")
    methods = as_list(config.get("method", []))
    if any(method in contract.RENAMED_METHODS for method in methods):
        warn("config key 'method': 'hf2019' is the old name of the timing method 'timeit' (the "
             "era is still called hf2019); it works, but write 'method: timeit'")
        new = []  # both spellings given name one method once
        for method in map(contract.method_name, methods):
            new += [method] if method not in new else []
        config["method"] = new if isinstance(config["method"], list) else new[0]
    if isinstance(config.get("hf2019"), dict):
        warn("config key 'hf2019' (the settings repeat and number) is now called 'timeit'")
        old = config.pop("hf2019")
        config["timeit"] = dict(old, **config.get("timeit", {}))
    return config


def coerce_command_line_numbers(config, lists=("batch_sizes", "sequence_lengths"),
                                mappings=("duel", "timeit", "training", "disturbance")):
    """Turn number strings into numbers, and true/false into booleans, where the schema expects
    them.

    ``snakemake --config 'batch_sizes=[1,2]' 'duel={min_samples: 5}' accept_drift=true`` parses
    lists and mappings with YAML's BaseLoader, which keeps every item a string, and may keep a
    plain value a string too; anything that is not a number or a boolean word is left as it is,
    for the schema to reject with its key and value.
    """
    for key in BOOLEAN_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip().lower() in BOOLEAN_WORDS:
            config[key] = BOOLEAN_WORDS[value.strip().lower()]
    for key in lists:
        if isinstance(config.get(key), list):
            config[key] = [_number(item) for item in config[key]]
    for key in mappings:
        if isinstance(config.get(key), dict):
            config[key] = dict(
                (name, [_number(item) for item in value] if isinstance(value, list)
                 else _number(value))
                for name, value in config[key].items()
            )
    return config


def task_grid(config, task):
    """(batch sizes, sequence lengths) a cell of ``task`` sweeps: training has its own grid
    (config key training), each list falling back to the inference grid's; generation's prompt
    lengths are the inference grid's lengths."""
    own = config.get("training", {}) if task == "training" else {}
    return (own.get("batch_sizes") or config["batch_sizes"],
            own.get("sequence_lengths") or config["sequence_lengths"])


def resolve_dir(config, key, default, checkout):
    """A folder from the config; relative paths are taken from the checkout."""
    folder = os.path.expanduser(config.get(key, default))
    return folder if os.path.isabs(folder) else os.path.join(checkout, folder)


def resolve_models_dir(config, checkout):
    return resolve_dir(config, "models_dir", "config/models", checkout)


def resolve_era_envs_dir(config, checkout):
    return resolve_dir(config, "era_envs_dir", ".era-envs", checkout)


def max_replicates(config):
    """The most processes a cell's point may get: config max_replicates, never fewer than
    replicates (then no point gets more)."""
    replicates = processes_per_cell(config)
    return max(replicates, config.get("max_replicates") or replicates)
