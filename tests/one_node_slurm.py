"""A real one-node SLURM cluster on localhost for the tests: Debian's slurm-wlm and munge.

Everything lives in one folder (config, state, logs, munge key and socket); the daemons run in the
foreground as children of the test, so they are stopped by their process ids. Client commands
find the cluster through ``SLURM_CONF`` (``Cluster.env``). Without a database daemon SLURM keeps
its own record of finished jobs in a job-completion file (``jobcomp/filetxt``), read by
``Cluster.completed_jobs``.
"""
import os
import signal
import socket
import subprocess
import time

import debian_packages

# {program the tests run: the Debian package that has it}
PACKAGES = {"munged": "munge", "mungekey": "munge", "slurmctld": "slurm-wlm",
            "slurmd": "slurm-wlm", "sbatch": "slurm-wlm", "squeue": "slurm-wlm",
            "scancel": "slurm-wlm", "sinfo": "slurm-wlm"}
NODE = "duelnode"
PARTITION = "duel"


class ClusterError(RuntimeError):
    """The cluster could not be installed or started; the message says why."""


def install_packages(timeout=debian_packages.TIMEOUT_S):
    """Install slurm-wlm and munge where a program is missing (one apt user at a time)."""
    try:
        debian_packages.ensure(PACKAGES, timeout=timeout)
    except debian_packages.PackageError as error:
        raise ClusterError("could not install %s: %s"
                           % (" ".join(sorted(set(PACKAGES.values()))), error)) from error


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_mb():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise ClusterError("no MemTotal in /proc/meminfo")


SLURM_CONF = """\
ClusterName=duel
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge.socket
CredType=cred/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
# No cgroups here: processes are tracked through /proc, tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without a memory default one job would take the whole node.
DefMemPerCPU=1000
# SLURM's own record of every finished job (no accounting database here).
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/jobcomp.txt
# Finished jobs stay visible to squeue this long (the executor's status command here).
MinJobAge=300
KillWait=5
ReturnToService=2
MpiDefault=none
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory}
PartitionName={partition} Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """munged, slurmctld and slurmd on localhost, configured and logging under ``folder``."""

    def __init__(self, folder, cpus=2):
        self.folder = str(folder)
        self.cpus = cpus
        self.conf = os.path.join(self.folder, "slurm.conf")
        self.jobcomp = os.path.join(self.folder, "jobcomp.txt")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.processes = []

    def start(self, timeout=60):
        """Write the config, start the three daemons, and wait until the node is idle."""
        os.makedirs(os.path.join(self.folder, "state"))
        os.makedirs(os.path.join(self.folder, "spool"))
        os.chmod(self.folder, 0o755)  # munged wants its socket's folder searchable by all
        with open(self.conf, "w") as handle:
            handle.write(SLURM_CONF.format(
                host=socket.gethostname().split(".")[0], folder=self.folder, node=NODE,
                partition=PARTITION, cpus=self.cpus, memory=int(memory_mb() * 0.8),
                ctld_port=free_port(), slurmd_port=free_port()))
        key = os.path.join(self.folder, "munge.key")
        self._run(["mungekey", "--create", "--keyfile", key, "--bits", "1024"])
        self._spawn("munged", ["munged", "--foreground", "--force",
                               "--socket", os.path.join(self.folder, "munge.socket"),
                               "--key-file", key,
                               "--log-file", os.path.join(self.folder, "munged.log"),
                               "--pid-file", os.path.join(self.folder, "munged.pid"),
                               "--seed-file", os.path.join(self.folder, "munged.seed")])
        self._wait_for(lambda: os.path.exists(os.path.join(self.folder, "munge.socket")),
                       timeout, "munged never opened its socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", self.conf])
        self._wait_for(self._node_idle, timeout, "the node never became idle")

    def stop(self, timeout=20):
        """Cancel what is left on the cluster, then stop each daemon by its process id."""
        if self.processes:
            subprocess.run(["scancel", "--partition", PARTITION], env=self.env,
                           capture_output=True, timeout=30)
            deadline = time.time() + timeout  # let slurmd end the jobs' processes first
            while time.time() < deadline and self._jobs_alive():
                time.sleep(0.5)
        for name, process, log in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=timeout)
            log.close()
        self.processes = []

    def squeue(self):
        """Jobs SLURM knows now: (job id, state, comment) for each."""
        result = self._run(["squeue", "--noheader", "--states=all", "--format=%i|%T|%k"])
        return [tuple(line.split("|", 2)) for line in result.stdout.splitlines() if line]

    def _jobs_alive(self):
        try:
            states = [state for _, state, _ in self.squeue()]
        except (ClusterError, subprocess.TimeoutExpired):
            return False
        return any(state in ("PENDING", "RUNNING", "COMPLETING", "SUSPENDED") for state in states)

    def completed_jobs(self):
        """SLURM's own record of finished jobs: {job id: {field: value}} from the jobcomp file."""
        jobs = {}
        if os.path.exists(self.jobcomp):
            with open(self.jobcomp) as handle:
                for line in handle:
                    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
                    if "JobId" in fields:
                        jobs[fields["JobId"]] = fields
        return jobs

    def logs(self):
        """The tail of every daemon's log, for failure messages."""
        text = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log", "munged.out",
                     "slurmctld.out", "slurmd.out"):
            path = os.path.join(self.folder, name)
            if os.path.exists(path):
                with open(path, errors="replace") as handle:
                    text.append("--- %s\n%s" % (name, handle.read()[-1500:]))
        return "\n".join(text)

    def _run(self, command, timeout=30):
        result = subprocess.run(command, env=self.env, capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            raise ClusterError("%s failed (%d): %s\n%s" % (" ".join(command), result.returncode,
                                                         result.stderr, self.logs()))
        return result

    def _spawn(self, name, command):
        log = open(os.path.join(self.folder, name + ".out"), "w")
        process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append((name, process, log))

    def _node_idle(self):
        for name, process, _ in self.processes:
            if process.poll() is not None:
                raise ClusterError("%s exited (%d) while starting:\n%s"
                                   % (name, process.returncode, self.logs()))
        result = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=self.env,
                                capture_output=True, text=True, timeout=30)
        return result.returncode == 0 and result.stdout.strip() == "idle"

    def _wait_for(self, ready, timeout, reason):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError("%s within %d s:\n%s" % (reason, timeout, self.logs()))
