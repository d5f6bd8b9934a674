"""Planning the deployment modes (duel/cell/adapters/deployed.py): what they need, where their
artifacts and runners go, and a clear refusal where they cannot run.

- Modes jitcpp and savedcpp build a C/C++ runner (cpp/) against the era's own wheel, with
  CMake and the machine's C++ compiler: both must be here when the workflow plans.
- Runner docker or apptainer: the era images carry no compiler, so the deployment modes are
  refused at planning (the Python loaders too: they exist to be compared with the C/C++ runners
  on one artifact).
- A runner is cached per era, device, runtime and lock-file hash in ``runners_dir``: a changed
  lock file gets a new folder (a new build), changed sources a rebuild (Snakemake's mtime).
"""
import os
import shutil

from duel.cell import artifacts, frameworks
from duel.cell.adapters import deployed

from duel.host.plan import layout
from duel.host.stacks import eras


class DeploymentError(ValueError):
    """The deployment modes cannot run as configured; the message says why and what to do."""


def requested(config):
    """The deployment modes the config asks for, in config order."""
    return [mode for framework in config["frameworks"]
            for mode in config["modes"].get(framework, []) if deployed.is_deployed(mode)]


def artifact_formats(config):
    """The artifact formats the config's deployment modes are exported to, sorted."""
    return sorted({deployed.artifact_format(mode) for mode in requested(config)})


def compiler():
    """The C++ compiler CMake would pick: $CXX, else c++ / g++ / clang++ on PATH (or None)."""
    candidates = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return found
    return None


def check(config, which=shutil.which, find_compiler=compiler):
    """Refuse what cannot run; returns the requested deployment modes."""
    modes = requested(config)
    if not modes:
        return modes
    runner = config.get("runner", "native")
    if runner != "native":
        raise DeploymentError(
            "config key 'modes': the deployment modes (%s) cannot run with runner %s: the era "
            "images carry no C++ compiler or CMake to build the C/C++ runners against the "
            "image's own wheels. Use runner: native for them." % (", ".join(modes), runner))
    if any(deployed.runs_in_cpp(mode) for mode in modes):
        missing = [name for name, found in (("cmake", which("cmake")),
                                            ("C++ compiler (c++, g++ or $CXX)",
                                             find_compiler()))
                   if not found]
        if missing:
            raise DeploymentError(
                "config key 'modes': modes jitcpp and savedcpp build their runners with CMake "
                "and a C++ compiler, and this machine has no %s on PATH. Install them (Debian/"
                "Ubuntu: `apt-get install cmake g++ ninja-build`; conda: `conda install -c "
                "conda-forge cmake cxx-compiler ninja`), or drop those modes."
                % " and no ".join(missing))
    return modes


# Where a runner's build record lives (an artifact's folder: layout.ARTIFACT_PATTERN), as the
# rules spell it with wildcards (rules/deploy.smk); the functions below fill them in for one cell.
RUNNER_PATTERN = os.path.join("{era}-{device}", "{runtime}-{lock_key}", "build.json")


def artifact_folder(era, device, artifact_format, model):
    return layout.ARTIFACT_PATTERN.format(era=era, device=device, artifact=artifact_format, model=model)


def artifact_manifest(era, device, artifact_format, model):
    """The manifest an export writes last in its artifact folder (duel/cell/export.py)."""
    return os.path.join(artifact_folder(era, device, artifact_format, model), artifacts.MANIFEST)


def runner_record(runners_dir, checkout, era, device, framework):
    """The build record (build.json) of the runner a C/C++ cell of ``framework`` uses."""
    lock = eras.lock_file(checkout, era, device)
    return os.path.join(runners_dir, RUNNER_PATTERN.format(
        era=era, device=device, runtime=frameworks.FRAMEWORKS[framework].runtime, lock_key=eras.lock_key(lock)))
