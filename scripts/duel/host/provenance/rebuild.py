"""Rebuilding a past run from its manifests (runs.py): plan, check, and say how close.

A run folder may hold shards from several invocations and commits. Each shard belongs to the
newest manifest that says it wrote it; each such manifest is one *part*, rebuilt at its own
commit (plus its recorded diff) in a clone of its own, with its recorded config and model files.
Everything that can be refused is refused here, in one line each, before any job starts.
"""
import glob
import os
import shutil
import subprocess
import sys

import yaml

from duel.cell import environment

from duel.host.plan import layout
from duel.host.provenance import runs
from duel.host.stacks import images


class RebuildError(ValueError):
    """A run that cannot be rebuilt as asked; the message is one line saying what to do."""


class RebuildFailed(RuntimeError):
    """The rebuild's own work failed (its workflow, or it wrote no manifest): one line naming its
    log."""


def results_dir(run):
    """The results folder of a run given as its folder or as its results/ folder."""
    folder = layout.results_folder(run)
    if folder is not None:
        return folder
    raise RebuildError("%s is not a run folder (no results/shards or results/runs in it)" % run)


def shards_of(results):
    """Every shard in a results folder, as the path relative to its run folder (results/...)."""
    run = os.path.dirname(os.path.abspath(results))
    return sorted(os.path.relpath(path, run) for path in glob.glob(
        os.path.join(glob.escape(results), layout.SHARDS, "**", "*.parquet"), recursive=True))


def plan_parts(results):
    """([(manifest path, record, its shards)], shards no manifest names), oldest part first."""
    found = runs.manifests(results)
    if not found:
        raise RebuildError(
            "%s has no run manifest (results/runs/*/manifest.json): it was made before runs "
            "recorded one. Rebuild it by hand (check out the commit in its shards' git_commit "
            "column and run with the same config), or compare it with a new run: "
            "duel compare %s NEW" % (os.path.dirname(os.path.abspath(results)), results))
    owner = {}
    for path, record in found:  # oldest first: a newer run that rewrote a shard owns it
        for shard in record.get("shards") or []:
            owner[os.path.normpath(shard)] = path
    parts, orphans = {}, []
    for shard in shards_of(results):
        if os.path.normpath(shard) in owner:
            parts.setdefault(owner[os.path.normpath(shard)], []).append(shard)
        else:
            orphans.append(shard)
    ordered = [(path, record, parts[path]) for path, record in found if path in parts]
    if not ordered:
        raise RebuildError("no manifest in %s/runs names a shard that is still in %s/shards: "
                           "nothing to rebuild" % (results, results))
    return ordered, orphans


def check_commit(repository, commit):
    """The recorded commit must be in the repository the rebuild runs from."""
    if commit in (None, "unknown"):
        raise RebuildError("the manifest records no git commit (the run was not made from a git "
                           "checkout): it cannot be rebuilt at its code")
    found = subprocess.run(["git", "-C", repository, "cat-file", "-e", commit + "^{commit}"],
                           capture_output=True)
    if found.returncode != 0:
        raise RebuildError("commit %s is not in the repository at %s: fetch it first (git -C %s "
                           "fetch <remote> %s)" % (commit, repository, repository, commit))


def check_images(record):
    """Every recorded image of a container run must be here (same ID), else the build command."""
    for image in record.get("images") or []:
        name, wanted = image["image"], image.get("image_id")
        hint = images.build_hint(image["era"], image["device"], image["runner"])
        if image["runner"] == "docker":
            problem = images.engine_problem()
            if problem:
                raise RebuildError("the run's image %s (%s) cannot be looked up: %s; start the "
                                   "engine, or %s" % (name, wanted or "no ID recorded",
                                                      problem, hint))
            here = images.image_id(wanted or name) or images.image_id(name)
        else:
            here = images.file_digest(name) if os.path.isfile(name) else None
        if here is None:
            raise RebuildError("the run's image %s (%s) is not here: %s" % (
                name, wanted or "no ID recorded", hint))


def checkout(repository, commit, diff_path, folder):
    """A clone of ``repository`` at ``commit`` in ``folder`` (the user's checkout untouched),
    with the recorded uncommitted diff applied when there is one."""
    if os.path.exists(folder):
        shutil.rmtree(folder)
    git = lambda *args: subprocess.run(("git",) + args, capture_output=True, text=True,
                                       check=True)
    git("clone", "--quiet", "--shared", "--no-checkout", repository, folder)
    git("-C", folder, "checkout", "--quiet", "--detach", commit)
    if diff_path:
        applied = subprocess.run(["git", "-C", folder, "apply", "--binary",
                                  os.path.abspath(diff_path)], capture_output=True, text=True)
        if applied.returncode != 0:
            raise RebuildError("the recorded diff %s does not apply to commit %s: %s" % (
                diff_path, commit, applied.stderr.strip().splitlines()[-1:]))


def use_todays_locks(repository, code):
    """Copy this checkout's lock files over the old commit's (``--today-stack``)."""
    for path in glob.glob(os.path.join(repository, "envs", "*")):
        if os.path.isfile(path):
            shutil.copy(path, os.path.join(code, "envs", os.path.basename(path)))


def write_inputs(record, folder, repository, models=None, cells=None):
    """The recorded config, with its model files written into ``folder`` and the era
    environments shared with this checkout's; narrowed to ``models`` and ``cells``
    (framework/mode pairs) when given. Returns the config file's path."""
    config = dict(record["config"])
    models_dir = os.path.join(folder, "models")
    os.makedirs(models_dir, exist_ok=True)
    for path, text in record["files"]["model_files"].items():
        if text is not None:
            with open(os.path.join(models_dir, os.path.basename(path)), "w") as handle:
                handle.write(text)
    config["models_dir"] = os.path.abspath(models_dir)
    envs_dir = config.get("era_envs_dir", ".era-envs")
    config["era_envs_dir"] = envs_dir if os.path.isabs(envs_dir) else os.path.join(
        repository, envs_dir)
    if models:
        unknown = sorted(set(models) - set(config["models"]))
        if unknown:
            raise RebuildError("--models: %s not in the run (it ran %s)" % (
                ", ".join(unknown), ", ".join(config["models"])))
        config["models"] = [model for model in config["models"] if model in models]
    if cells:
        ran = set((framework, mode) for framework in config["frameworks"]
                  for mode in config["modes"].get(framework, []))
        unknown = sorted("%s/%s" % cell for cell in set(cells) - ran)
        if unknown:
            raise RebuildError("--cells: %s not in the run (it ran %s)" % (
                ", ".join(unknown), ", ".join(sorted("%s/%s" % cell for cell in ran))))
        config["frameworks"] = [f for f in config["frameworks"] if any(c[0] == f for c in cells)]
        config["modes"] = dict((f, [m for m in config["modes"][f] if (f, m) in cells])
                               for f in config["frameworks"])
    path = os.path.join(folder, "config.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=True)
    return path


def _short(text):
    return (text or "none")[:12]


def same_code(record, today_stack):
    commit = record["git_commit"]
    what = "commit + diff" if record.get("git_dirty") else "commit"
    line = "same code: yes, %s %s" % (what, commit[:12])
    if record.get("git_dirty"):
        line += " (its recorded uncommitted diff applied)"
    if today_stack:
        line += ", with today's lock files (--today-stack)"
    return line


def same_software(original, rebuilt):
    """Lock and installed-set hashes of each era environment, original vs rebuild."""
    before = dict(((row["era"], row["device"]), row) for row in original.get("environments", []))
    after = dict(((row["era"], row["device"]), row) for row in rebuilt.get("environments", []))
    differences, names = [], []
    for key in sorted(after):
        old, new = before.get(key), after[key]
        name = "%s-%s" % key
        names.append("%s lock %s" % (name, _short(new["lock_sha256"])))
        if old is None:
            differences.append("%s: not in the original" % name)
            continue
        for field, label in (("lock_sha256", "lock"), ("installed_sha256", "installed set")):
            if old.get(field) != new.get(field):
                differences.append("%s %s %s -> %s" % (name, label, _short(old.get(field)),
                                                      _short(new.get(field))))
    if differences:
        return "same software: NO: " + "; ".join(differences)
    return "same software: yes (%s; installed sets equal)" % ", ".join(names)


def same_hardware(original, here):
    """CPU model, vector flags, threads and GPUs, original vs this machine."""
    fields = (("cpu_model", "CPU"), ("cpu_flags", "flags"), ("cores", "threads"),
              ("gpus", "GPU"))
    show = lambda value: ", ".join(value) or "none" if isinstance(value, list) else str(value)
    differences = ["%s %s -> %s" % (label, show(original.get(key)), show(here.get(key)))
                   for key, label in fields if original.get(key) != here.get(key)]
    if differences:
        return "same hardware: NO: " + "; ".join(differences)
    return "same hardware: yes (%s)" % ", ".join(
        "%s %s" % (label, show(here.get(key))) for key, label in fields)


def newest_manifest(results, since):
    """The newest manifest in ``results`` started at or after ``since`` (ISO time), or None."""
    found = [record for _, record in runs.manifests(results)
             if (record.get("started_at") or "") >= since]
    return found[-1] if found else None


def prepare(run, output, repository, given_cells):
    """Every check that can refuse, before any job: the parts, their commits and images."""
    results = results_dir(run)
    if os.path.abspath(output) == os.path.dirname(os.path.abspath(results)):
        raise RebuildError("--output must be a new folder, not the run itself")
    parts, orphans = plan_parts(results)
    cells = [tuple(cell.split("/", 1)) for cell in given_cells or []]
    if any(len(cell) != 2 for cell in cells):
        raise RebuildError("--cells: write each cell as framework/mode, e.g. pytorch/eager")
    for _, record, _ in parts:
        check_commit(repository, record["git_commit"])
        check_images(record)
    return parts, orphans, cells


def run_part(output, index, path, record, repository, models, cells, today_stack, cores):
    """Rebuild one invocation into ``output`` (snakemake --cores ``cores``); returns the rebuild's
    manifest."""
    folder = os.path.join(os.path.abspath(output), "rebuild", "part-%d" % index)
    code = os.path.join(folder, "code")
    diff = os.path.join(os.path.dirname(path), record["diff"]) if record.get("diff") else None
    checkout(repository, record["git_commit"].split("+")[0], diff, code)
    if today_stack:
        use_todays_locks(repository, code)
    config = write_inputs(record, folder, repository, models, cells)
    log = os.path.join(folder, "snakemake.log")
    sys.stderr.write("rebuilding %s at %s: log %s\n" % (path, record["git_commit"][:12], log))
    started = environment.utc_now()
    with open(log, "w") as handle:
        answer = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", os.path.join(code, "Snakefile"),
             "--directory", os.path.abspath(output), "--cores", str(cores),
             "--configfile", config], stdout=handle, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=os.path.join(code, "scripts")))  # its own code
    if answer.returncode != 0:
        with open(log) as handle:
            tail = handle.read().strip().splitlines()[-15:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise RebuildFailed("the rebuild's workflow failed (exit %d): see %s"
                            % (answer.returncode, log))
    results = os.path.join(output, layout.RESULTS)
    # A rebuild resumed with nothing left to do starts no run: its earlier manifest stands.
    rebuilt = newest_manifest(results, started) or newest_manifest(results, "")
    if rebuilt is None:
        raise RebuildFailed("the rebuild at %s wrote no manifest (its commit predates run "
                            "manifests): its software cannot be compared"
                            % record["git_commit"])
    return rebuilt
