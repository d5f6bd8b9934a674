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

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or what ``platform`` knows elsewhere."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (IOError, OSError):
        pass
    return platform.processor() or platform.machine()


def usable_cpus():
    """CPUs this process may run on (its affinity mask), else all logical CPUs."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def git_commit():
    """The commit of the checkout this code runs from ('+dirty' if it has changes), or 'unknown'.

    Read by the cell itself rather than passed in, so that a new commit alone does not make
    Snakemake re-run finished cells.
    """
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


def host_columns(threads, runner, image, image_digest, config_sha256, seed, started_at):
    """Environment columns that do not depend on the framework."""
    return {
        "python": platform.python_version(),
        "numpy_version": np.__version__,
        "pyarrow_version": pa.__version__,
        "cpu_model": cpu_model(),
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
