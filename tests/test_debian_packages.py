"""tests/debian_packages.py: two processes installing one package at once both succeed (one
machine-wide lock, a second look after it), and callers whose programs are present never reach apt,
root or the lock."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

import debian_packages
from conftest import REPO

pytestmark = pytest.mark.install

TESTS = os.path.join(REPO, "tests")
# A caller in a process of its own: waits for a common start moment, then prints what it installed.
CALLER = """import json, sys, time
import debian_packages
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
try:
    print(json.dumps({"installed": debian_packages.ensure(json.loads(sys.argv[2]))}))
except debian_packages.PackageError as error:
    print(json.dumps({"error": str(error)}))
"""


def caller(programs, start=0.0, env=None, python=sys.executable, prefix=(), path=TESTS):
    """A process calling ``ensure(programs)`` at ``start`` (a time.time()), importing the helper
    from ``path``."""
    env = dict(env or os.environ, PYTHONPATH=path)
    command = list(prefix) + [python, "-c", CALLER, repr(start), json.dumps(programs)]
    return subprocess.Popen(command, env=env, cwd="/", stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def answer(process, timeout=900):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, out + err
    return json.loads(out)


def purge_hello():
    """Purge GNU hello if dpkg knows it, under the helper's lock (apt is used by one at a time)."""
    with debian_packages.locked():
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "hello"],
                                capture_output=True, text=True)
        if status.returncode == 0 and not status.stdout.endswith("not-installed"):
            result = subprocess.run(debian_packages.APT + ["purge", "-y", "hello"],
                                    capture_output=True, text=True, timeout=600,
                                    env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def no_hello():
    """GNU hello not installed, so that the install is real; purged again afterwards (the machine
    is left as it was found)."""
    purge_hello()
    assert shutil.which("hello") is None, "a hello not from Debian's package: %s" % shutil.which(
        "hello")
    yield
    purge_hello()


def test_two_processes_installing_one_package_at_once_both_succeed(no_hello):
    start = time.time() + 3  # both imported and waiting by then: they ask at the same moment
    processes = [caller({"hello": "hello"}, start) for _ in range(2)]
    answers = [answer(process) for process in processes]
    assert all("installed" in each for each in answers), answers
    # Exactly one installed it; the other found it there once it had the lock (or before).
    assert sorted((each["installed"] for each in answers), key=len) == [[], ["hello"]], answers
    result = subprocess.run(["hello"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stdout.strip() == "Hello, world!", result


def test_a_caller_whose_programs_are_present_never_reaches_apt(tmp_path):
    # Fake dpkg and apt-get first on PATH: each records its call and fails (saying so on stderr,
    # so that `dpkg --audit` finds nothing to repair).
    calls = tmp_path / "calls"
    fakes = tmp_path / "bin"
    fakes.mkdir()
    for name in ("apt-get", "dpkg"):
        fake = fakes / name
        fake.write_text('#!/bin/sh\necho "%s $*" >> %s\necho "fake %s" >&2\nexit 1\n'
                        % (name, calls, name))
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH="%s:%s" % (fakes, os.environ["PATH"]))
    assert answer(caller({"sh": "dash"}, env=env)) == {"installed": []}
    assert not calls.exists(), calls.read_text()
    # The same fakes do catch a caller that reaches apt, and its error names the command.
    result = answer(caller({"duel-no-such-program": "hello"}, env=env))
    assert "`apt-get -q -o DPkg::Lock::Timeout=300 update` failed (status 1)" in result["error"]
    assert "fake apt-get" in result["error"]
    assert "apt-get" in calls.read_text()


def test_a_caller_whose_programs_are_present_needs_no_root():
    python = "/usr/bin/python3"  # the checkout's .venv may lie in a folder only root can read
    if os.geteuid() != 0:
        prefix = ()
    elif shutil.which("setpriv") and os.access(python, os.X_OK):
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    else:
        pytest.fail("running as root without setpriv or %s: cannot drop root here" % python)
    # The helper from a folder anyone can read (a checkout, like pytest's temporary folders,
    # may lie in one only root can enter).
    folder = tempfile.mkdtemp(prefix="duel-apt-helper-")
    try:
        os.chmod(folder, 0o755)
        shutil.copy(os.path.join(TESTS, "debian_packages.py"), folder)
        os.chmod(os.path.join(folder, "debian_packages.py"), 0o644)
        # As anyone but root, reaching apt-get install would fail the call.
        process = caller({"sh": "dash"}, python=python if prefix else sys.executable,
                         prefix=prefix, path=folder)
        assert answer(process, timeout=60) == {"installed": []}
    finally:
        shutil.rmtree(folder)
