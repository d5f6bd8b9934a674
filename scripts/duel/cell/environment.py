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
    """The checkout's commit, from DUEL_GIT_COMMIT (set by the workflow) or git itself."""
    given = os.environ.get("DUEL_GIT_COMMIT")
    if given:
        return given
    try:
        output = subprocess.check_output(
            ["git", "-C", HERE, "rev-parse", "HEAD"], stderr=subprocess.DEVNULL
        )
        return output.decode().strip()
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
