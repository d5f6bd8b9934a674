"""What every subcommand shares: the parser that refuses in one line, and the exit codes.

A subcommand's ``--help`` ends with its exit codes and an example; the codes mean the same in
every subcommand, so a script or CI job can read any of them alike.
"""
import argparse
import os
import re

SCRIPTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # holds duel/
CHECKOUT = os.path.dirname(SCRIPTS)

FINE, FINDING, BAD_INPUT, FAILED = 0, 1, 2, 3
EXIT_CODES = (
    (FINE, "fine"),
    (FINDING, "a finding: a point clearly slower, failed points, a rebuild that runs slower"),
    (BAD_INPUT, "bad input, or a run that cannot be read (one line on stderr, nothing done)"),
    (FAILED, "the work itself failed: a rebuild's workflow, an image build, a lock resolution, a "
             "file that cannot be read or written (one line naming it)"),
)


class Refusal(Exception):
    """Bad input found after parsing: one line on stderr, exit status 2."""


class Failure(Exception):
    """The work itself failed: one line on stderr (after what the work wrote), exit status 3."""


class Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit status 2 (no usage block, no traceback)."""

    def error(self, message):
        self.exit(BAD_INPUT, "%s: error: %s\n" % (self.prog, message))


def epilog(meanings, examples):
    """The end of a ``--help``: the exit codes this command gives (``meanings`` {code: its own
    words, or None for the shared ones}) and example command lines."""
    shared = dict(EXIT_CODES)
    lines = ["exit status:"]
    for code in sorted(meanings):
        lines.append("  %d  %s" % (code, meanings[code] or shared[code]))
    lines += ["", "example%s:" % ("s" if len(examples) > 1 else "")]
    lines += ["  " + example for example in examples]
    return "\n".join(lines)


def add(subparsers, name, description, meanings, examples):
    """A subcommand's parser, its help laid out as written."""
    parser = subparsers.add_parser(
        name, help=description.split("\n")[0].rstrip("."), description=description,
        epilog=epilog(meanings, examples), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(parser=parser)
    return parser


def items(text):
    """A list option's value: comma-separated items. Such an option is also repeatable
    (``action="extend"``): ``--models a,b`` is ``--models a --models b``."""
    found = [item.strip() for item in text.split(",") if item.strip()]
    if not found:
        raise argparse.ArgumentTypeError("give one or more items, comma-separated, not %r" % text)
    return found


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def name(text):
    """A value that names something (a machine, an era): letters, digits, '.', '_', '-'."""
    if not NAME.match(text):
        raise argparse.ArgumentTypeError("%r is not a name (letters, digits, '.', '_', '-')"
                                         % text)
    return text
