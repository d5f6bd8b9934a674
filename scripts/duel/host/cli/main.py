"""The ``duel`` command: one parser, a subcommand per job, the same exit codes in each."""
import argparse
import importlib
import os
import sys

from duel.host.cli import command

DESCRIPTION = """Duel: PyTorch against TensorFlow on transformer models. The workflow itself runs
with snakemake (README); these are the commands around it."""

TRACEBACK_ENV = "DUEL_TRACEBACK"  # set: an unexpected error shows its traceback
# The subcommands' modules (duel/host/cli/<name>.py), in the order --help lists them. A command
# line that names one imports only that one: the others' imports (matplotlib, the frameworks'
# tables) would cost a second before every answer.
SUBCOMMANDS = ("show", "runs", "history", "trend", "bisect", "publish", "compare", "store",
               "rebuild", "lock", "image")


def _named(argv):
    """The subcommand ``argv`` names (its first word that is not an option), or None."""
    words = [word for word in (sys.argv[1:] if argv is None else argv) if not word.startswith("-")]
    return words[0] if words and words[0] in SUBCOMMANDS else None


def parser(only=None):
    top = command.Parser(
        prog="duel", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=command.epilog(dict((code, None) for code, _ in command.EXIT_CODES),
                              ["duel show runs/today",
                               "duel compare runs/before runs/after --output comparison",
                               "duel SUBCOMMAND --help"]))
    subcommands = top.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
    for name in ([only] if only else SUBCOMMANDS):
        importlib.import_module("duel.host.cli." + name).add(subcommands)
    return top


def main(argv=None):
    """Parse, run the subcommand; its exit status. Refusals and failures are one line each."""
    try:
        args = parser(_named(argv)).parse_args(argv)
    except SystemExit as stop:  # --help (0) or a parser's one-line error (2)
        return stop.code
    try:
        check = getattr(args, "check", None)
        if check:
            check(args.parser, args)
        return args.func(args)
    except SystemExit as stop:  # a check's parser.error
        return stop.code
    except command.Refusal as error:
        sys.stderr.write("%s: error: %s\n" % (args.parser.prog, error))
        return command.BAD_INPUT
    except command.Failure as error:
        sys.stderr.write("%s: error: %s\n" % (args.parser.prog, error))
        return command.FAILED
    except Exception as error:  # a damaged file or folder, or a bug: one line, exit 3
        if os.environ.get(TRACEBACK_ENV):
            raise
        sys.stderr.write("%s: error: %s; %s=1 shows the traceback\n"
                         % (args.parser.prog, described(error), TRACEBACK_ENV))
        return command.FAILED


def described(error):
    """An error nothing above caught, in one line that names its file where it has one."""
    where = getattr(error, "filename", None)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if where and str(where) not in text:
        text = "%s: %s" % (where, text)
    return "%s (%s)" % (text, type(error).__name__)
