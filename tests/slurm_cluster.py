"""A real SLURM cluster on this machine for the tests: Debian's slurm-wlm and munge.

One controller (slurmctld) and one munged where the tests run, and two compute nodes, ``duel1``
and ``duel2``: each node's slurmd runs in its own network and UTS namespace, with its own hostname
and an address on a private bridge the cluster makes (NETWORK), and is bound to one CPU of this
machine (the CPU set every process of its jobs inherits), so the nodes time without disturbing each
other. The namespaces are held by a process per node (started with ``unshare``, never written under
/run); the nodes share this machine's file system as cluster nodes share one.

Everything lives in one folder (config, state, logs, munge key and socket); the daemons run in the
foreground as children of the cluster, so they are stopped by their process ids. Every process the
cluster starts carries MARKER in its environment, and the links are named after it, so what a
crashed test left (daemons, namespaces with their jobs, links) is removed at the next start.
Client commands find the cluster through ``SLURM_CONF`` (``Cluster.env``). Without a database
daemon SLURM keeps its own record of finished jobs in a job-completion file (``jobcomp/filetxt``,
``Cluster.completed_jobs``).

By hand (until Ctrl-C; it prints the line that points SLURM's commands at it):
    python tests/slurm_cluster.py /tmp/duel-cluster
"""
import argparse
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time

import debian_packages

# {program the cluster runs: the Debian package that has it}
PACKAGES = {"munged": "munge", "mungekey": "munge", "slurmctld": "slurm-wlm",
            "slurmd": "slurm-wlm", "sbatch": "slurm-wlm", "squeue": "slurm-wlm",
            "scancel": "slurm-wlm", "sinfo": "slurm-wlm", "scontrol": "slurm-wlm",
            "ip": "iproute2", "unshare": "util-linux", "nsenter": "util-linux"}
NODES = ("duel1", "duel2")
PARTITION = "duel"
MARKER = "DUEL_TEST_CLUSTER"  # in the environment of every process the cluster starts
BRIDGE = "duelclbr0"  # the link names: ip's limit is 15 characters
LINK = "duelcl-%s"
# The private network of the bridge: the controller is its first address, node i the (i+1)th.
# A network already routed on this machine is skipped for the next one.
NETWORKS = ["10.213.%d.0/24" % third for third in range(47, 57)]


class ClusterError(RuntimeError):
    """The cluster could not be installed or started; the message says why."""


def install_packages(timeout=debian_packages.TIMEOUT_S):
    """Install slurm-wlm, munge and the namespace tools where a program is missing (one apt user
    at a time)."""
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
SlurmctldHost={host}({controller})
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge.socket
CredType=cred/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool-%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd-%n.log
# No cgroups here: processes are tracked through /proc, tasks are not bound by SLURM (each node's
# slurmd, and so every job on it, is bound to the node's CPU).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
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
# A job whose node is lost fails (NODE_FAIL) rather than starting again unseen: the run says so.
JobRequeue=0
SlurmdTimeout=30
MpiDefault=none
{nodes}
PartitionName={partition} Nodes={node_list} Default=YES MaxTime=INFINITE State=UP
"""
NODE_LINE = "NodeName={name} NodeAddr={address} CPUs=1 RealMemory={memory}"


def _environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return []


def net_namespace(pid):
    try:
        return os.readlink("/proc/%d/ns/net" % pid)
    except OSError:
        return None


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def processes_in(namespace, exclude=()):
    """The process ids in network namespace ``namespace`` (a /proc/PID/ns/net link)."""
    return [pid for pid in _pids() if pid not in exclude and net_namespace(pid) == namespace]


def links():
    """The names of this namespace's network links."""
    listing = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in listing.splitlines()
            if line.count(":") >= 2]


def clear_leftovers(keep=None):
    """Kill what an earlier cluster left: its daemons and namespace holders (MARKER in their
    environment), every process still in such a namespace (a job's), and its links; a running
    cluster ``keep`` and its links are spared."""
    marker = MARKER.encode() + b"="
    spared = marker + keep.folder.encode() if keep else None
    mine = {os.getpid(), os.getppid()}
    left = [pid for pid in _pids() if pid not in mine
            and any(entry.startswith(marker) and entry != spared for entry in _environ(pid))]
    own = net_namespace(os.getpid())
    namespaces = {net_namespace(pid) for pid in left} - {None, own}
    doomed = set(left)
    for namespace in namespaces:
        doomed.update(processes_in(namespace, exclude=mine))
    _kill(sorted(doomed))
    kept = {BRIDGE} | {LINK % name for name in keep.names} if keep else set()
    for name in links():
        if (name == BRIDGE or name.startswith(LINK % "")) and name not in kept:
            subprocess.run(["ip", "link", "delete", name], capture_output=True)


def free_network():
    """The first of NETWORKS that no route on this machine reaches."""
    routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True,
                            text=True).stdout
    taken = []
    for line in routes.splitlines():
        word = line.split()[0] if line.split() else ""
        try:
            taken.append(ipaddress.ip_network(word, strict=False))
        except ValueError:  # "default"
            pass
    for candidate in NETWORKS:
        network = ipaddress.ip_network(candidate)
        if not any(network.overlaps(other) for other in taken):
            return network
    raise ClusterError("every network of %s is routed here already" % ", ".join(NETWORKS))


class Node:
    """A compute node: its name, address, CPU and the process holding its namespaces."""

    def __init__(self, name, address, cpu):
        self.name, self.address, self.cpu = name, address, cpu
        self.holder = None

    @property
    def namespace(self):
        return net_namespace(self.holder.pid)

    def enter(self):
        """The command prefix that runs a program on this node (its network and hostname)."""
        return ["nsenter", "--target", str(self.holder.pid), "--net", "--uts", "--"]

    def bind(self):
        """For subprocess's preexec_fn: this node's CPU, inherited by every child."""
        os.sched_setaffinity(0, [self.cpu])


class Cluster:
    """munged and slurmctld here, a slurmd per node in the node's namespaces, all configured and
    logging under ``folder``."""

    def __init__(self, folder, nodes=NODES):
        self.folder = str(folder)
        self.conf = os.path.join(self.folder, "slurm.conf")
        self.jobcomp = os.path.join(self.folder, "jobcomp.txt")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.processes = []
        cpus = sorted(os.sched_getaffinity(0))
        self.network = self.controller = None
        self.names = tuple(nodes)
        self.nodes = {}
        self._cpus = [cpus[index % len(cpus)] for index in range(len(self.names))]

    def node(self, name):
        return self.nodes[name]

    def start(self, timeout=60):
        """Clear leftovers; make the network and the nodes' namespaces; write the config; start
        munged, slurmctld and every slurmd; wait until every node is idle."""
        clear_leftovers()
        for name in ("state",) + tuple("spool-" + node for node in self.names):
            os.makedirs(os.path.join(self.folder, name), exist_ok=True)
        os.chmod(self.folder, 0o755)  # munged wants its socket's folder searchable by all
        self._make_network()
        memory = int(memory_mb() * 0.8) // len(self.names)
        with open(self.conf, "w") as handle:
            handle.write(SLURM_CONF.format(
                host=socket.gethostname().split(".")[0], controller=self.controller,
                folder=self.folder, partition=PARTITION, node_list=",".join(self.names),
                nodes="\n".join(NODE_LINE.format(name=node.name, address=node.address,
                                                 memory=memory) for node in self.nodes.values()),
                ctld_port=free_port(), slurmd_port=free_port()))
        key = os.path.join(self.folder, "munge.key")
        self._run(["mungekey", "--create", "--force", "--keyfile", key, "--bits", "1024"])
        self._spawn("munged", ["munged", "--foreground", "--force",
                               "--socket", os.path.join(self.folder, "munge.socket"),
                               "--key-file", key,
                               "--log-file", os.path.join(self.folder, "munged.log"),
                               "--pid-file", os.path.join(self.folder, "munged.pid"),
                               "--seed-file", os.path.join(self.folder, "munged.seed")])
        self._wait_for(lambda: os.path.exists(os.path.join(self.folder, "munge.socket")),
                       timeout, "munged never opened its socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        for node in self.nodes.values():
            self.start_slurmd(node)
        self._wait_for(self._nodes_idle, timeout, "the nodes never became idle")

    def bring_back(self, name, timeout=60):
        """A lost node back: its slurmd started again and SLURM told to use it."""
        self.start_slurmd(self.nodes[name])
        self._run(["scontrol", "update", "nodename=" + name, "state=resume"])
        self._wait_for(self._nodes_idle, timeout, "node %s never came back" % name)

    def start_slurmd(self, node):
        self._spawn("slurmd-" + node.name, node.enter() + ["slurmd", "-D", "-N", node.name,
                                                           "-f", self.conf], node.bind)

    def lose(self, name):
        """A node lost as hardware is lost: its slurmd and every process of its jobs killed at
        once (the namespace's holder stays, so the node can come back); then SLURM told the node
        is down. The process ids killed."""
        node = self.nodes[name]
        killed = processes_in(node.namespace, exclude={node.holder.pid})
        _kill(killed)
        for entry in [entry for entry in self.processes if entry[0] == "slurmd-" + name]:
            entry[1].wait()
            entry[2].close()
            self.processes.remove(entry)
        self._run(["scontrol", "update", "nodename=" + name, "state=down", "reason=lost"])
        return killed

    def stop(self, timeout=20):
        """Cancel what is left on the cluster, stop each daemon by its process id, then the
        namespaces' holders (and anything left in a namespace) and the links."""
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
        for node in self.nodes.values():
            if node.holder is not None:
                _kill(processes_in(node.namespace, exclude={node.holder.pid}))
                node.holder.kill()
                node.holder.wait()
                node.holder = None
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)

    def squeue(self):
        """Jobs SLURM knows now: (job id, state, comment, node list) for each."""
        result = self._run(["squeue", "--noheader", "--states=all", "--format=%i|%T|%k|%N"])
        return [tuple(line.split("|", 3)) for line in result.stdout.splitlines() if line]

    def node_states(self):
        """{node: state} as sinfo says it (idle, alloc, down, ...)."""
        result = self._run(["sinfo", "--noheader", "--Node", "--format=%N|%t"])
        return dict(line.split("|", 1) for line in result.stdout.split() if "|" in line)

    def _jobs_alive(self):
        try:
            states = [job[1] for job in self.squeue()]
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
        for name in sorted(os.listdir(self.folder)):
            if name.endswith((".log", ".out")):
                with open(os.path.join(self.folder, name), errors="replace") as handle:
                    text.append("--- %s\n%s" % (name, handle.read()[-1500:]))
        return "\n".join(text)

    def _make_network(self):
        """A bridge with the controller's address, and per node a namespace holder and a veth
        pair: one end on the bridge, the other in the node's namespace with its address."""
        self.network = free_network()
        hosts = self.network.hosts()
        self.controller = str(next(hosts))
        self._ip("link", "add", BRIDGE, "type", "bridge")
        self._ip("addr", "add", "%s/%d" % (self.controller, self.network.prefixlen), "dev", BRIDGE)
        self._ip("link", "set", BRIDGE, "up")
        for name, cpu in zip(self.names, self._cpus):
            node = Node(name, str(next(hosts)), cpu)
            node.holder = subprocess.Popen(
                ["unshare", "--net", "--uts", "--", sys.executable, "-c",
                 "import time\nwhile True: time.sleep(3600)"],
                env=dict(os.environ, **{MARKER: self.folder}), stdin=subprocess.DEVNULL)
            self._wait_for(lambda: node.namespace not in (None, net_namespace(os.getpid())),
                           10, "node %s's namespaces never came up" % name)
            self.nodes[name] = node
            outside, inside = LINK % name, LINK % name + "n"
            self._ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            self._ip("link", "set", inside, "netns", str(node.holder.pid))
            self._ip("link", "set", outside, "master", BRIDGE, "up")
            self._run(node.enter() + ["hostname", name])
            inner = node.enter() + ["ip"]
            self._run(inner + ["link", "set", "lo", "up"])
            self._run(inner + ["addr", "add", "%s/%d" % (node.address, self.network.prefixlen),
                               "dev", inside])
            self._run(inner + ["link", "set", inside, "up"])

    def _ip(self, *arguments):
        self._run(["ip"] + list(arguments))

    def _run(self, command, timeout=30):
        result = subprocess.run(command, env=self.env, capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            raise ClusterError("%s failed (%d): %s\n%s" % (" ".join(command), result.returncode,
                                                         result.stderr, self.logs()))
        return result

    def _spawn(self, name, command, preexec_fn=None):
        log = open(os.path.join(self.folder, name + ".out"), "w")
        process = subprocess.Popen(command, env=dict(self.env, **{MARKER: self.folder}),
                                   stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
        self.processes.append((name, process, log))

    def _nodes_idle(self):
        for name, process, _ in self.processes:
            if process.poll() is not None:
                raise ClusterError("%s exited (%d) while starting:\n%s"
                                   % (name, process.returncode, self.logs()))
        try:
            states = self.node_states()
        except (ClusterError, subprocess.TimeoutExpired):
            return False
        return sorted(states) == sorted(self.names) and set(states.values()) == {"idle"}

    def _wait_for(self, ready, timeout, reason):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError("%s within %d s:\n%s" % (reason, timeout, self.logs()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="where the cluster keeps everything (made if missing)")
    args = parser.parse_args(argv)
    os.makedirs(args.folder, exist_ok=True)
    install_packages()
    cluster = Cluster(os.path.abspath(args.folder))
    try:
        cluster.start()
        print("SLURM cluster up: nodes %s; point SLURM's commands at it with\n"
              "  export SLURM_CONF=%s\nCtrl-C stops it." % (", ".join(cluster.names), cluster.conf),
              flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT, signal.SIGTERM])
        signal.sigwait([signal.SIGINT, signal.SIGTERM])
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
