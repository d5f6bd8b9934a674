"""A Docker engine for the tests: the one that answers, or a private dockerd started here.

Machines without a running engine (these, and CI) get Debian's docker.io and debootstrap
installed when missing (tests/debian_packages.py), and a dockerd of their own: its socket, exec
root and pid file in a fresh temporary folder, its data root in a cache folder
(DUEL_TEST_DOCKER_ROOT, default ~/.cache/duel-tests/docker) so that the locally made base image
and the layers of the test image are reused by later runs on the same machine; a lock file keeps
two test runs from sharing one data root at once. No bridge network and no iptables rules: builds
use the host's network, cells run with none. The engine is stopped by its process id when the
tests end; what cannot be installed or started fails the tests with the reason.
"""
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time

import debian_packages

PACKAGES = {"docker": "docker.io", "dockerd": "docker.io", "debootstrap": "debootstrap"}
START_TIMEOUT_S = 90
LOCK_TIMEOUT_S = 1200


class EngineError(RuntimeError):
    """The engine cannot be had; the message says why."""


def answers(env):
    try:
        result = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                                env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def install_missing(log):
    """Install what is missing of docker.io and debootstrap (one apt user at a time)."""
    try:
        debian_packages.ensure(PACKAGES, log=log)
    except debian_packages.PackageError as error:
        raise EngineError(str(error)) from error


def unmount_below(folder):
    """Unmount what dockerd left mounted in its exec root (e.g. netns/default)."""
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(folder + os.sep)), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


class Engine:
    """``with Engine(log_path) as engine:`` -> ``engine.env`` has DOCKER_HOST set to it."""

    def __init__(self, log_path):
        self.log_path = log_path
        self.process = None
        self.lock = None
        self.folder = None
        self.env = dict(os.environ)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        with open(self.log_path, "a") as log:
            install_missing(log)
        if answers(self.env):  # an engine that is already running (DOCKER_HOST or the default)
            return
        root = os.environ.get("DUEL_TEST_DOCKER_ROOT",
                              os.path.expanduser("~/.cache/duel-tests/docker"))
        os.makedirs(root, exist_ok=True)
        self.lock = open(os.path.join(os.path.dirname(root), "docker.lock"), "w")
        deadline = time.time() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    raise EngineError("another test run held %s for %d s" % (root, LOCK_TIMEOUT_S))
                time.sleep(2)
        self.folder = tempfile.mkdtemp(prefix="duel-dockerd-")  # short: a socket path <= 107
        socket = os.path.join(self.folder, "docker.sock")
        command = ["dockerd", "--data-root", root, "--exec-root", os.path.join(self.folder, "exec"),
                   "--pidfile", os.path.join(self.folder, "docker.pid"),
                   "--host", "unix://" + socket, "--bridge", "none", "--iptables=false",
                   "--ip6tables=false"]
        with open(self.log_path, "a") as log:
            log.write("$ %s\n" % " ".join(command))
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.env["DOCKER_HOST"] = "unix://" + socket
        deadline = time.time() + START_TIMEOUT_S
        while not answers(self.env):
            if self.process.poll() is not None or time.time() > deadline:
                with open(self.log_path) as log:
                    tail = log.read()[-3000:]
                raise EngineError("dockerd did not start (status %s) within %d s:\n%s"
                                  % (self.process.poll(), START_TIMEOUT_S, tail))
            time.sleep(0.5)

    def stop(self):
        """Stop the dockerd started here (and its containerd), by process id."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    pass
            try:  # whatever of its session is left (containerd, shims): its group, by its id
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.process = None
        if self.folder:
            unmount_below(self.folder)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        if self.lock:
            self.lock.close()
            self.lock = None
