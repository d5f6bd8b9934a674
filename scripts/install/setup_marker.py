"""Write PREFIX/duel-env.json after scripts/setup.sh installed lock files into PREFIX's venv.

    python scripts/install/setup_marker.py PREFIX INSTALLER LOCK...

Like the era environments' marker (stacks/eras.py): the hash of every lock file installed (the
first is the environment's own), the installer, the interpreter and the hash of the installed set,
written last and atomically. Planning reads it to say which lock a drifted .venv was set up from.
"""
import datetime
import os
import platform
import subprocess
import sys

from duel.cell import files, locks

MARKER = "duel-env.json"


def installer_version(installer, prefix):
    command = ([os.path.join(".venv", "bin", "uv"), "--version"] if installer == "uv"
               else [sys.executable, "-m", "pip", "--version"])
    answer = subprocess.run(command, stdout=subprocess.PIPE, universal_newlines=True, check=True)
    return " ".join(answer.stdout.split()[:2])


def main(prefix, installer, lock_files):
    packages = locks.installed()
    marker = {
        "lock_file": lock_files[0],
        "lock_sha256": locks.lock_sha256(lock_files[0]),
        "lock_files": dict((lock, locks.lock_sha256(lock)) for lock in lock_files),
        "installer": installer_version(installer, prefix),
        "python": platform.python_version(),
        "installed_sha256": locks.set_sha256(packages),
        "packages": locks.set_text(packages).split(),
        "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    files.write_json(os.path.join(prefix, MARKER), marker)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
