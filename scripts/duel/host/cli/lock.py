"""``duel lock``: the project's lock files regenerated, complete, pinned, hashed."""
import os
import subprocess

from duel.host.cli import command
from duel.host.stacks import as_of, locking, pip_sources

DESCRIPTION = """Regenerate the project's lock files.

Every lock is complete and pinned, with a SHA-256 for every file.
Resolved locks come from a short list of direct requirements (envs/<name>.in) by
`uv pip compile --generate-hashes` for Python 3.11 on x86_64 Linux. uv keeps the versions the
lock already has (its output file is its preference), so a plain run changes no version; an
upgrade is asked for by name. Layered locks (the test tools, the SLURM plugin) are resolved
against envs/current-cpu.txt and list only what they add to it. The complete locks that are kept
by hand (the CUDA and 2019 ones: pins chosen for their era) keep every pin and comment; only their
hashes are refreshed (--no-deps for their Python version).

uv reads no pip configuration, so the sources and CA bundle of this machine's pip are handed to
it (duel/host/stacks/pip_sources.py); anything after -- is passed on to uv as well. torch's CPU
build (+cpu) is not on the default index: it must come from one of those sources, PyTorch's CPU
wheel index or a folder holding its wheel. uv is the one pinned in envs/uv.txt (scripts/setup.sh
installs it into .venv), or --uv.

With --as-of DATE it makes a new era instead: torch, TensorFlow, transformers and everything
under them as they stood on that day (uv's --exclude-newer), for the newest Python at hand that
had wheels of them then, into envs/<era>.txt with its entry in envs/eras.yaml. --pin holds a
package at a release (the rest still as of the date)."""

def default_uv():
    local = os.path.join(command.CHECKOUT, ".venv", "bin", "uv")
    return local if os.access(local, os.X_OK) else "uv"


def add(subparsers):
    parser = command.add(
        subparsers, "lock", DESCRIPTION,
        {command.FINE: "the locks are written", command.BAD_INPUT: None,
         command.FAILED: "uv could not resolve or hash a lock (its message is above)"},
        ["duel lock                                 # keep every version, refresh hashes",
         "duel lock --upgrade-package numpy         # move one package deliberately",
         "duel lock -- --extra-index-url URL        # more uv options (a source of torch's "
         "CPU build, say)",
         "duel lock --as-of 2021-06-01 --era asof-2021-06  # an era as the index stood that day",
         "duel lock --as-of 2021-06-01 --era tf25 --pin tensorflow==2.5.0"])
    parser.add_argument("--upgrade-package", "-P", type=command.items, action="extend",
                        default=[], metavar="NAMES",
                        help="let these packages move to their newest allowed versions "
                             "(comma-separated)")
    parser.add_argument("--upgrade", action="store_true", help="let every package move")
    parser.add_argument("--only", type=command.items, action="extend", metavar="LOCKS",
                        help="regenerate only these lock files, comma-separated "
                             "(e.g. envs/tests.txt); default: all of %s"
                             % ", ".join(locking.known(command.CHECKOUT)))
    parser.add_argument("--as-of", metavar="DATE",
                        help="make a new era (--era) of the packages as of this day, YYYY-MM-DD")
    parser.add_argument("--era", type=command.name, help="with --as-of: the new era's name")
    parser.add_argument("--pin", action="append", default=[], metavar="NAME==VERSION",
                        help="with --as-of: hold a package at this release (repeatable)")
    parser.add_argument("--uv", default=default_uv(), help="the uv executable")
    parser.add_argument("uv_options", nargs="*", metavar="-- UV_OPTION",
                        help="more options for uv, after --")
    parser.set_defaults(func=run)


def make_era(args, options, uv_env):
    """--as-of: the era's lock and registry entry (duel/host/stacks/as_of.py)."""
    if not args.era:
        raise command.Refusal("--as-of needs --era NAME, the new era's name")
    try:
        lock, text, date, python = as_of.make_era(command.CHECKOUT, args.era, args.as_of,
                                                  args.pin, args.uv, uv_env, options)
    except as_of.AsOfError as error:
        raise command.Refusal(str(error))
    except OSError as error:
        raise command.Failure(str(error))
    print("era %s: %s, Python %s, %s" % (args.era, as_of.label(text, date), python,
                                        os.path.relpath(lock, command.CHECKOUT)))
    return command.FINE


def run(args):
    if (args.era or args.pin) and not args.as_of:
        raise command.Refusal("--era and --pin go with --as-of DATE")
    known = locking.known(command.CHECKOUT)
    unknown = [lock for lock in args.only or [] if lock not in known]
    if unknown:
        raise command.Refusal("--only: %s is not a lock file of the project (%s)"
                              % (", ".join(unknown), ", ".join(known)))
    options, environment = pip_sources.uv_options(pip_sources.pip_settings())
    options += args.uv_options
    uv_env = dict(os.environ, **environment)
    if args.as_of:
        return make_era(args, options, uv_env)
    upgrade = ["--upgrade"] if args.upgrade else []
    for name in args.upgrade_package:
        upgrade += ["--upgrade-package", name]
    try:
        locking.lock_all(command.CHECKOUT, args.uv, uv_env, options, args.only, upgrade)
    except (subprocess.CalledProcessError, OSError, locking.LockError) as error:
        raise command.Failure(str(error))
    return command.FINE
