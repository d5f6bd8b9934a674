"""The environment columns of a shard: what produced its numbers (same for every row).

Framework-specific columns (framework version, CUDA, cuDNN, device name) come from the adapter;
the runner and image come from whoever started the cell (the workflow or a person at a shell).
"""
import datetime
import os
import platform
import socket
import subprocess

import numpy as np
import pyarrow as pa

from . import locks

HERE = os.path.dirname(os.path.abspath(__file__))


# The /proc/cpuinfo flags that decide how many floating-point operations a core does per cycle.
VECTOR_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "avx2", "fma", "avx", "neon", "asimd")


def _cpuinfo_fields():
    """The first processor's fields of /proc/cpuinfo (lower-case keys), empty elsewhere."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except (IOError, OSError):
        pass
    return fields


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or what ``platform`` knows elsewhere."""
    return _cpuinfo_fields().get("model name") or platform.processor() or platform.machine()


def cpu_flags():
    """The CPU's vector extensions among VECTOR_FLAGS, comma-separated ('' if none known)."""
    fields = _cpuinfo_fields()
    flags = set((fields.get("flags") or fields.get("features", "")).split())
    return ",".join(flag for flag in VECTOR_FLAGS if flag in flags)


def cpu_max_mhz():
    """The CPU's highest clock (cpufreq's maximum; else the MHz /proc/cpuinfo reports)."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as handle:
            return int(handle.read().strip()) / 1000.0
    except (IOError, OSError, ValueError):
        pass
    try:
        return float(_cpuinfo_fields().get("cpu mhz"))
    except (TypeError, ValueError):
        return None


def nvidia_smi(field):
    """One ``nvidia-smi --query-gpu`` field of the first GPU, or None without a GPU."""
    try:
        output = subprocess.check_output(
            ("nvidia-smi", "--query-gpu=" + field, "--format=csv,noheader"),
            stderr=subprocess.DEVNULL, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = output.decode().strip().splitlines()
    return lines[0].strip() if lines else None


def usable_cpus():
    """CPUs this process may run on (its affinity mask), else all logical CPUs."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def git_commit():
    """The commit of the checkout this code runs from ('+dirty' if it has changes), or 'unknown'.

    Read by the cell itself rather than passed in, so that a new commit alone does not make
    Snakemake re-run finished cells. In an image without git, the docker runner hands the
    checkout's commit in as DUEL_GIT_COMMIT.
    """
    if os.environ.get("DUEL_GIT_COMMIT"):
        return os.environ["DUEL_GIT_COMMIT"]
    run = lambda *args: subprocess.check_output(
        ("git", "-C", HERE) + args, stderr=subprocess.DEVNULL
    ).decode().strip()
    try:
        return run("rev-parse", "HEAD") + ("+dirty" if run("status", "--porcelain") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def utc_now():
    """Now, UTC, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


SLURM_COLUMNS = (
    "slurm_job_id", "slurm_cluster", "slurm_partition", "slurm_node", "slurm_cpus_per_task",
    "slurm_cpus_on_node", "slurm_mem_mb", "slurm_gpus",
)


def _integer(text):
    """'16' -> 16; None, '' or anything else that is not a plain integer -> None."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def slurm_columns(environ=None):
    """The SLURM allocation this process runs in, from the variables SLURM sets in a job.

    All None outside a SLURM job. ``slurm_mem_mb`` is the job's memory on this node: SLURM sets
    SLURM_MEM_PER_NODE for ``--mem`` and SLURM_MEM_PER_CPU for ``--mem-per-cpu``. ``slurm_gpus``
    lists the GPUs SLURM gave the job (their indices on the node).
    """
    environ = os.environ if environ is None else environ
    get = lambda name: environ.get(name) or None
    job_id = get("SLURM_JOB_ID")
    if job_id is None:
        return dict((name, None) for name in SLURM_COLUMNS)
    cpus_on_node = _integer(get("SLURM_CPUS_ON_NODE"))
    mem_mb = _integer(get("SLURM_MEM_PER_NODE"))
    per_cpu = _integer(get("SLURM_MEM_PER_CPU"))
    if mem_mb is None and per_cpu is not None and cpus_on_node is not None:
        mem_mb = per_cpu * cpus_on_node
    return {
        "slurm_job_id": job_id,
        "slurm_cluster": get("SLURM_CLUSTER_NAME"),
        "slurm_partition": get("SLURM_JOB_PARTITION"),
        "slurm_node": get("SLURMD_NODENAME"),
        "slurm_cpus_per_task": _integer(get("SLURM_CPUS_PER_TASK")),
        "slurm_cpus_on_node": cpus_on_node,
        "slurm_mem_mb": mem_mb,
        "slurm_gpus": get("SLURM_JOB_GPUS") or get("SLURM_STEP_GPUS"),
    }


# The first line of a cell's log: where it runs, read back by the run when the cell does not
# finish (a lost node, a killed job).
RUNS_ON = "run_cell: runs on "


def where(environ=None):
    """'node duel2 (SLURM job 7)' inside a SLURM job, else 'host <hostname>'."""
    columns = slurm_columns(environ)
    if columns["slurm_node"]:
        return "node %s (SLURM job %s)" % (columns["slurm_node"], columns["slurm_job_id"])
    return "host %s" % socket.gethostname()


def host_columns(threads, runner, image, image_digest, config_sha256, seed, started_at):
    """Environment columns that do not depend on the framework."""
    columns = {
        "python": platform.python_version(),
        "numpy_version": np.__version__,
        "pyarrow_version": pa.__version__,
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cpu_max_mhz": cpu_max_mhz(),
        "gpu_driver": nvidia_smi("driver_version"),
        "logical_cpus": os.cpu_count(),
        "threads": threads,
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "runner": runner,
        "image": image,
        "image_digest": image_digest,
        "git_commit": git_commit(),
        "config_sha256": config_sha256,
        "started_at": started_at,
        "seed": seed,
    }
    columns.update(slurm_columns())
    return columns


def era_lock_file(era, device, checkout=None):
    """The lock file of an era and device in the checkout this code runs from, as the workflow
    picks it (stacks/eras.py): envs/<era>-<device>.txt, else envs/<era>.txt; None if neither."""
    checkout = checkout or os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    for name in ("%s-%s.txt" % (era, device), "%s.txt" % era):
        path = os.path.join(checkout, "envs", name)
        if os.path.isfile(path):
            return path
    return None


def lock_columns(era, device, drift_accepted, checkout=None, lock=None):
    """The lock file (``lock``, else the era's in envs/) and installed-set columns of a shard
    (duel/cell/locks.py), read from the interpreter this cell runs in, and whether the run
    accepted a drifted environment."""
    checkout = checkout or os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    columns = locks.lock_columns(lock or era_lock_file(era, device, checkout), checkout)
    columns["drift_accepted"] = bool(drift_accepted)
    return columns
