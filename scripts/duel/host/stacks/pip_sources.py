"""uv's options for the package sources this machine's pip is configured with.

uv reads no pip configuration (pip.conf, PIP_* variables): where pip here takes wheels from local
folders or extra indexes (e.g. the CPU build of torch from PyTorch's CPU wheel index) and trusts a
CA bundle of its own, uv must be told the same explicitly. This prints, one per line, the uv
options that say so (find-links, index-url, extra-index-url; pip's way of weighing every index,
which hash checking makes safe), and the CA bundle as ``SSL_CERT_FILE=...`` for uv's
environment. scripts/setup.sh (before the package is installed) and ``duel lock`` use it;
stdlib only, run by any Python with pip.

Where those sources lack a CPU build of torch (a ``+cpu`` pin: pip's default configuration), it
is on PyTorch's own CPU index, which uv's torch backend knows; ``DUEL_TORCH_INDEX`` names an
index that serves those wheels in its place (a mirror). ``--torch-cpu`` prints the options
that take them from there.

    PYTHONPATH=scripts python -m duel.host.stacks.pip_sources [--torch-cpu] [python-with-pip]
"""
import os
import subprocess
import sys

# pip's precedence: environment variables, then the site, user and global configuration files.
VARIANTS = (":env:", "site", "user", "global")


def pip_settings(python=sys.executable):
    """{key: value} of pip's configuration as pip itself would use it ('' where unset)."""
    answer = subprocess.run([python, "-m", "pip", "config", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, universal_newlines=True)
    found = {}
    for line in answer.stdout.splitlines() if answer.returncode == 0 else []:
        name, _, value = line.partition("=")
        variant, _, key = name.rpartition(".")
        found.setdefault(key, {})[variant] = value.strip().strip("'\"")
    settings = {}
    for key, by_variant in found.items():
        for variant in VARIANTS:
            if variant in by_variant:
                settings[key] = by_variant[variant]
                break
    return settings


def uv_options(settings):
    """(uv command-line options, uv environment variables) for pip's ``settings``."""
    options = []
    for folder in settings.get("find-links", "").split():
        options += ["--find-links", folder]
    if settings.get("index-url"):
        options += ["--index-url", settings["index-url"]]
    for index in settings.get("extra-index-url", "").split():
        options += ["--extra-index-url", index]
    if len(options) > 0:
        # pip weighs every version on every source; uv takes the first index that has a
        # package unless told otherwise. The hashes in the lock files pin the files themselves.
        options += ["--index-strategy", "unsafe-best-match"]
    environment = {}
    cert = settings.get("cert") or os.environ.get("SSL_CERT_FILE")
    if cert:
        environment["SSL_CERT_FILE"] = cert
    return options, environment


def torch_cpu_options(environ=os.environ):
    """uv's options that find the CPU builds of torch: DUEL_TORCH_INDEX ahead of the other
    sources where it is set, else uv's torch backend (PyTorch's CPU index)."""
    mirror = environ.get("DUEL_TORCH_INDEX")
    return ["--extra-index-url", mirror] if mirror else ["--torch-backend", "cpu"]


def main(argv):
    if argv[1:2] == ["--torch-cpu"]:
        print("\n".join(torch_cpu_options()))
        return
    options, environment = uv_options(pip_settings(argv[1] if len(argv) > 1 else sys.executable))
    for name, value in sorted(environment.items()):
        print("%s=%s" % (name, value))
    for option in options:
        print(option)


if __name__ == "__main__":
    main(sys.argv)
