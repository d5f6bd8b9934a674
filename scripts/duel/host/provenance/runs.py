"""Run manifests: everything needed to run an invocation of the workflow again.

Each real run (not a dry run, not a job re-parsing the workflow on a cluster node) writes one
folder ``results/runs/<start time>-<host>-<pid>/`` (new_run_id) from the main Snakemake process:
``manifest.json`` when it starts (status ``running``) and again when it ends (status ``success``
or ``error``, end time, the shards it wrote), and ``diff.patch`` beside it when the checkout had
uncommitted changes. The manifest holds the resolved config (after --configfile/--config
merging), the git commit, the lock and installed-set hashes of every era environment, the images
of container runners, Snakemake's version and command line, the machine, and the text of every
config file and model architecture file the run read. ``duel rebuild`` reads it back.
"""
import datetime
import glob
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata

from duel.cell import environment, files

from duel.host.plan import layout
from duel.host.stacks import eras, images

MANIFEST = "manifest.json"
DIFF = "diff.patch"


def _git(checkout, *args):
    return subprocess.run(("git", "-C", checkout) + args, capture_output=True, text=True)


def git_state(checkout):
    """(commit, dirty, diff): HEAD, whether the checkout has changes, and those changes as one
    patch (tracked files against HEAD, then untracked files as new files)."""
    head = _git(checkout, "rev-parse", "HEAD")
    if head.returncode != 0:
        return "unknown", False, ""
    status = _git(checkout, "status", "--porcelain").stdout
    if not status.strip():
        return head.stdout.strip(), False, ""
    diff = _git(checkout, "diff", "--binary", "HEAD").stdout
    untracked = _git(checkout, "ls-files", "--others", "--exclude-standard", "-z").stdout
    for path in filter(None, untracked.split("\0")):
        diff += _git(checkout, "diff", "--binary", "--no-index", "--", "/dev/null", path).stdout
    return head.stdout.strip(), True, diff


def _normalised(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_set_sha256(pins):
    """SHA-256 of an installed set: ``name==version`` lines, names normalised, sorted."""
    lines = sorted(set("%s==%s" % (_normalised(name), version) for name, version in pins))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def workflow_env_installed():
    """(name, version) of every distribution in this interpreter's environment (.venv)."""
    return [(dist.metadata["Name"], dist.version) for dist in metadata.distributions()
            if dist.metadata["Name"]]


def freeze_installed(freeze_lines):
    """(name, version) from ``pip freeze`` lines (an era environment's duel-env.json)."""
    pins = []
    for line in freeze_lines:
        name, sep, version = line.partition("==")
        if sep:
            pins.append((name.strip(), version.strip()))
    return pins


def environment_hashes(checkout, era_devices, envs_dir, workflow_env_lock_matches=None):
    """Lock file hash and installed-set hash of each (era, device) environment a run uses.

    The lock hash is the SHA-256 of the lock file the run read (stacks/eras.py, lock_file); the
    installed set is this interpreter's (era ``current`` in .venv) or the era environment's
    ``pip freeze`` from its duel-env.json; None where it is not built (yet) or runs in an image.
    """
    rows = []
    for era, device in era_devices:
        lock = eras.lock_file(checkout, era, device)
        row = {"era": era, "device": device, "lock_file": os.path.relpath(lock, checkout),
               "lock_sha256": eras.lock_sha256(lock), "environment": None,
               "installed_sha256": None, "installed_count": None}
        if eras.in_workflow_env(era, device, lock):
            pins = workflow_env_installed()
            row["environment"] = sys.prefix
        else:
            prefix = eras.keyed_prefix(envs_dir, era, device, lock)
            marker = eras.read_marker(prefix)
            pins = freeze_installed(marker["packages"]) if marker else None
            row["environment"] = prefix
        if pins:
            row["installed_sha256"] = installed_set_sha256(pins)
            row["installed_count"] = len(pins)
        rows.append(row)
    return rows


def image_records(config, checkout, era_devices, runner):
    """Name and ID of the image of each (era, device) for runner docker or apptainer."""
    if runner not in ("docker", "apptainer"):
        return []
    rows = []
    for era, device in era_devices:
        name = images.image_for(config, checkout, era, device, runner)
        try:
            if runner == "docker":
                image = images.image_id(name)
            else:
                image = images.file_digest(name) if os.path.isfile(name) else None
        except (images.ImageError, OSError, subprocess.SubprocessError):
            image = None
        rows.append({"era": era, "device": device, "runner": runner, "image": name,
                     "image_id": image})
    return rows


def gpus():
    """The GPUs ``nvidia-smi -L`` lists (empty without one)."""
    try:
        output = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in output.stdout.splitlines() if line.strip()]


MACHINE_ENV = "DUEL_MACHINE"


def machine_name(config):
    """The machine's name in the store: config key ``machine``, else $DUEL_MACHINE, else the
    hostname (which clouds and clusters change from run to run)."""
    return (config or {}).get("machine") or os.environ.get(MACHINE_ENV) or platform.node()


def machine(cores, config=None):
    """What hardware a comparison of two runs needs to know, and the machine's name."""
    return {
        "name": machine_name(config),
        "hostname": platform.node(),
        "cpu_model": environment.cpu_model(),
        "cpu_flags": environment.cpu_flags(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": environment.usable_cpus(),
        "cores": cores,
        "gpus": gpus(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def files_read(config_files, model_files):
    """The text of every config file and model architecture file, by absolute path."""
    return {
        "config_files": dict((os.path.abspath(path), _read_text(path)) for path in config_files),
        "model_files": dict((os.path.abspath(path), _read_text(path)) for path in model_files),
    }


HOST_PART = re.compile(r"[^A-Za-z0-9]+")


def new_run_id(started):
    """'<UTC second>-<host>-<pid>': unique across the hosts that write into one results folder
    or one store, readable, and sorted by start."""
    stamp = started.replace(":", "").replace("-", "").replace("+0000", "Z")
    host = HOST_PART.sub("-", platform.node().split(".")[0]).strip("-")[:32] or "host"
    return "%s-%s-%d" % (stamp, host, os.getpid())


def shard_hashes(paths=None):
    """{path: SHA-256} of the shards now in results/shards (or of ``paths`` that exist): what
    decides, without clocks, which shards a run wrote."""
    if paths is None:
        paths = glob.glob(os.path.join(layout.at(layout.SHARDS), "**", "*.parquet"), recursive=True)
    return dict((os.path.normpath(path), files.file_sha256(path)) for path in sorted(paths)
                if ".partial-" not in path and os.path.isfile(path))


def start(config, checkout, era_devices, envs_dir, config_files, model_files, cores, argv,
          planned_shards, runs_dir=layout.at(layout.RUNS)):
    """Write a run's manifest as it starts; returns its path."""
    started = environment.utc_now()
    folder = os.path.join(runs_dir, new_run_id(started))
    os.makedirs(folder, exist_ok=True)
    commit, dirty, diff = git_state(checkout)
    if dirty:
        with open(os.path.join(folder, DIFF), "w") as handle:
            handle.write(diff)
    record = {
        "manifest_version": 1,
        "status": "running",
        "started_at": started,
        "ended_at": None,
        "git_commit": commit,
        "git_dirty": dirty,
        "diff": DIFF if dirty else None,
        "checkout": checkout,
        "workdir": os.getcwd(),
        "config": config,
        "environments": environment_hashes(checkout, era_devices, envs_dir),
        "images": image_records(config, checkout, era_devices, config.get("runner", "native")),
        "snakemake_version": metadata.version("snakemake"),
        "command_line": list(argv),
        "python_executable": sys.executable,
        "machine": machine(cores, config),
        "files": files_read(config_files, model_files),
        "planned_shards": sorted(planned_shards),
        "shards_before": shard_hashes(),
        "shards": [],
    }
    path = os.path.join(folder, MANIFEST)
    write(record, path)
    return path


def finish(path, status, checkout, era_devices, envs_dir, planned_shards=None):
    """Complete a run's manifest when it ends: status, end time, environment hashes (era
    environments built during the run now have theirs) and the shards this run wrote (planned
    shards whose content changed since it started). ``planned_shards``: the run's shards as known at its
    end (a settling round's are planned only after the first rounds)."""
    record = read(path)
    if planned_shards is not None:
        record["planned_shards"] = sorted(set(record["planned_shards"]) | set(planned_shards))
    record["status"] = status
    record["ended_at"] = environment.utc_now()
    record["environments"] = environment_hashes(checkout, era_devices, envs_dir)
    now = shard_hashes(record["planned_shards"])
    if "shards_before" in record:  # by content: what differs from the shard at the start
        before = record["shards_before"]
        written = dict((shard, digest) for shard, digest in now.items()
                       if before.get(shard) != digest)
    else:  # a manifest started by an older Duel: by file times
        started = datetime.datetime.fromisoformat(record["started_at"]).timestamp()
        written = dict((shard, digest) for shard, digest in now.items()
                       if os.path.getmtime(shard) >= started - 1)
    record["shards"] = sorted(written)
    record["shard_sha256"] = written
    write(record, path)
    return record


def write(record, path):
    files.write_json(path, record, sort_keys=True)


def wall_seconds(record):
    """A finished run's wall time from its manifest ``record``, or None while it runs."""
    if not (record.get("started_at") and record.get("ended_at")):
        return None
    started, ended = (datetime.datetime.fromisoformat(record[key]).timestamp()
                      for key in ("started_at", "ended_at"))
    return ended - started


def read(path):
    with open(path) as handle:
        return json.load(handle)


def last_wall_seconds(results_dir):
    """The wall time of the last finished run whose manifest is under ``results_dir``; None
    where none finished."""
    finished = [wall_seconds(record) for _, record in manifests(results_dir)]
    finished = [seconds for seconds in finished if seconds is not None]
    return finished[-1] if finished else None


def manifests(results_dir):
    """Every manifest under ``<results_dir>/runs``, oldest first, as (path, record)."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(results_dir), layout.RUNS, "*", MANIFEST)):
        try:
            found.append((path, read(path)))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda item: item[1].get("started_at") or "")


def shards_without_manifest(shards, results_dir=layout.RESULTS):
    """The shards (paths relative to the run folder) that no manifest says it wrote (a run still
    going counts every shard it planned)."""
    recorded = set()
    for _, record in manifests(results_dir):
        recorded.update(record.get("shards") or [])
        if record.get("status") == "running":
            recorded.update(record.get("planned_shards") or [])
    return [shard for shard in shards if os.path.normpath(shard) not in
            set(os.path.normpath(path) for path in recorded)]
