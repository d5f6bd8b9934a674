"""What planning asks this machine before any job starts: each era's environment or its
interpreter, the devices, the SLURM controller, the runner's engine and images.

Every refusal is a PlanError naming the config key and what to do.
"""
import os
import shutil
import subprocess

from duel.host.plan.config_keys import PlanError, resolve_era_envs_dir
from duel.host.stacks import eras as era_envs
from duel.host.stacks import images

def check_eras(config, checkout):
    """Every era needs a lock file; a built era needs a finished environment or its interpreter.

    Reads only: a stale environment (interrupted build, other lock file, interpreter gone)
    loses its marker when a real run's jobs are planned (eras.settle, from rules/common.smk),
    never while a dry run or a lint parses the workflow.
    """
    envs_dir = resolve_era_envs_dir(config, checkout)
    for era in config["eras"]:
        for device in config["devices"]:
            try:
                lock = era_envs.lock_file(checkout, era, device)
                own = era_envs.in_workflow_env(era, device, lock)
                if own or config.get("runner", "native") != "native":
                    continue
                prefix = era_envs.keyed_prefix(envs_dir, era, device, lock)
                if era_envs.stale_reason(prefix, lock):
                    era_envs.find_python(era_envs.required_python(lock))
            except era_envs.EraError as error:
                raise PlanError(str(error))


def gpu_present():
    """Whether an NVIDIA GPU answers on this machine."""
    return shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidiactl")


def check_devices(devices, has_gpu=gpu_present):
    """cuda cells run only where an NVIDIA GPU answers (the cells then check that their
    framework build sees it too, and fail loudly if not). Called for each job that runs on this
    machine: jobs sent to a cluster are checked on their node, by the cell."""
    if "cuda" in devices and not has_gpu():
        raise PlanError(
            "config key 'devices': device 'cuda' cannot run here: this machine has no NVIDIA "
            "GPU (no nvidia-smi / /dev/nvidiactl). Use devices: [cpu], or run the cuda cells "
            "on a GPU machine (the SLURM profile can send them to one)."
        )


def check_slurm_controller(run=subprocess.run):
    """The SLURM executor submits every job with sbatch: without a controller that answers, each
    job would fail at submission after a long wait, one message per job. ``scontrol ping`` asks
    the controller of SLURM_CONF (or the system's) at once."""
    if shutil.which("scontrol") is None:
        raise PlanError("the slurm executor needs SLURM's client commands (sbatch, squeue, "
                        "scontrol) on PATH: run Snakemake on a node that can submit jobs")
    try:
        answer = run(["scontrol", "ping"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     universal_newlines=True, timeout=60)
        said, failed = answer.stdout, answer.returncode != 0 or "DOWN" in answer.stdout
    except subprocess.TimeoutExpired:
        said, failed = "no answer within 60 s", True
    if failed:
        first = next((line.strip() for line in said.splitlines() if line.strip()), "")
        raise PlanError("the slurm executor needs a SLURM controller that answers, and "
                        "`scontrol ping` says: %s (SLURM_CONF=%s). Start or reach the "
                        "controller, then run the same command again."
                        % (first, os.environ.get("SLURM_CONF", "unset")))


def image_jobs(config):
    """(era, device) of every image the jobs need: each cell's, and the CPU one for references."""
    devices = ["cpu"] + [device for device in config["devices"] if device != "cpu"]
    return [(era, device) for era in config["eras"] for device in devices]


def _image(config, checkout, era, device, runner):
    try:
        return images.image_for(config, checkout, era, device, runner)
    except images.ImageError as error:
        raise PlanError("config key 'runner': runner %s, era %s, device %s: %s"
                        % (runner, era, device, error))


def _missing(config, checkout, era, device, runner, name, where):
    if (config.get("images") or {}).get(images.image_key(era, device)):
        what_to_do = ("build or fetch it, or change config key 'images' (%s)"
                      % images.image_key(era, device))
    else:
        what_to_do = images.build_hint(era, device, runner)
    return PlanError("config key 'runner': runner %s needs image %s (era %s, device %s), which "
                     "is not %s; %s" % (runner, name, era, device, where, what_to_do))


def check_docker(config, checkout):
    """The engine answers and has every image the jobs will run in."""
    problem = images.engine_problem()
    if problem:
        raise PlanError(
            "config key 'runner': runner docker needs a running Docker engine, and %s. Start "
            "it (e.g. `systemctl start docker`, or dockerd by hand as in containers/README.md; "
            "DOCKER_HOST names its socket), or use runner: native." % problem)
    for era, device in image_jobs(config):
        name = _image(config, checkout, era, device, "docker")
        try:
            found = images.image_id(name)
        except images.ImageError as error:
            raise PlanError("config key 'runner': runner docker: %s" % error)
        if found is None:
            raise _missing(config, checkout, era, device, "docker", name, "in the Docker engine")


def check_apptainer(config, checkout, enabled):
    """Snakemake runs the jobs in their container: images, and every local .sif exists."""
    if not enabled:
        raise PlanError(
            "config key 'runner': runner apptainer runs each job in its rule's container: image, "
            "which Snakemake does only with `--sdm apptainer` (and --apptainer-args=--nv "
            "for cuda cells); add it, or use runner: native or docker.")
    for era, device in image_jobs(config):
        name = _image(config, checkout, era, device, "apptainer")
        if "://" not in name and not os.path.isfile(name):
            raise _missing(config, checkout, era, device, "apptainer", name, "a file")


def check_runner(config, checkout, apptainer_enabled=False):
    runner = config.get("runner", "native")
    if runner == "docker":
        check_docker(config, checkout)
    elif runner == "apptainer":
        check_apptainer(config, checkout, apptainer_enabled)
