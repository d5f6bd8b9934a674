"""Debian packages the tests need (docker.io, slurm-wlm, ...), installed with apt where missing.

The two pytest-xdist workers may both need apt at once, and apt refuses a second caller ("Could not
get lock"), so every caller takes one machine-wide file lock first and checks again what is missing.
"""
import contextlib
import fcntl
import glob
import os
import shutil
import subprocess
import time

# One fixed path for every caller in every process (Debian has /var/lock; /tmp where it does not).
LOCK_PATH = ("/var/lock" if os.path.isdir("/var/lock") else "/tmp") + "/duel-apt.lock"
LISTS = "/var/lib/apt/lists"
# An apt outside our lock (unattended upgrades, a person) holding dpkg's lock is waited for.
APT = ["apt-get", "-q", "-o", "DPkg::Lock::Timeout=300"]
TIMEOUT_S = 1800  # the lock's wait and the commands together: docker.io alone takes minutes


class PackageError(RuntimeError):
    """A package could not be installed; the message names the command, status and output."""


def missing(programs_to_packages):
    """{program: package} of the programs not on PATH."""
    return {program: package for program, package in programs_to_packages.items()
            if shutil.which(program) is None}


@contextlib.contextmanager
def locked(timeout=TIMEOUT_S):
    """Hold the machine-wide apt lock of every caller here (waiting up to ``timeout`` s)."""
    try:
        handle = open(LOCK_PATH, "a")
    except PermissionError:  # made by another user: flock needs no write access
        handle = open(LOCK_PATH)
    try:
        deadline = time.time() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    raise PackageError("another installer held %s for %d s" % (LOCK_PATH, timeout))
                time.sleep(1)
        yield
    finally:
        handle.close()  # releases the lock


def ensure(programs_to_packages, log=None, timeout=TIMEOUT_S):
    """Install the packages whose program is missing; return those installed by this call.

    ``log``: an open text file that gets every command and its output. Callers whose programs
    are all present return at once, without the lock, root or apt.
    """
    if not missing(programs_to_packages):
        return []
    deadline = time.time() + timeout
    with locked(timeout):
        needed = missing(programs_to_packages)  # another worker may have installed them meanwhile
        if not needed:
            return []
        packages = sorted(set(needed.values()))
        if shutil.which("apt-get") is None:
            raise PackageError("%s missing and no apt-get to install %s"
                               % (", ".join(sorted(needed)), " ".join(packages)))

        def run(command):
            return _run(command, log, max(60, deadline - time.time()))

        # An install interrupted by an earlier run makes apt refuse to install anything. Only
        # then: `dpkg --audit` takes no lock, while `dpkg --configure -a` cannot wait for one.
        audit = subprocess.run(["dpkg", "--audit"], capture_output=True, text=True)
        if audit.stdout.strip():
            run(["dpkg", "--configure", "-a"])
        # The lists are fetched when there are none, else only when the install fails: a fresh
        # machine's lists may be stale (404), but an update costs a mirror round each time.
        install = APT + ["install", "-y", "--no-install-recommends"] + packages
        if not glob.glob(os.path.join(LISTS, "*_Packages*")):
            run(APT + ["update"])
            run(install)
        else:
            try:
                run(install)
            except PackageError:
                run(APT + ["update"])
                run(install)
    left = missing(programs_to_packages)
    if left:
        raise PackageError("installed %s, yet %s still not on PATH"
                           % (" ".join(packages), ", ".join(sorted(left))))
    return packages


def _run(command, log, timeout):
    """Run ``command`` non-interactively; PackageError with its output's tail if it fails."""
    text = " ".join(command)
    if log is not None:
        log.write("$ %s\n" % text)
        log.flush()
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        result = subprocess.run(command, env=environment, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired as error:
        output = error.output or ""
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
        status = "did not finish in %d s" % timeout
    else:
        output = result.stdout
        status = None if result.returncode == 0 else "failed (status %d)" % result.returncode
    if log is not None:
        log.write(output)
        log.flush()
    if status:
        raise PackageError("`%s` %s:\n%s" % (text, status, output[-3000:]))
