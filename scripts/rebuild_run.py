#!/usr/bin/env python
"""Another name for ``duel rebuild``, kept for the command lines that call this path."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # holds duel/

from duel.host.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.stderr.write("scripts/rebuild_run.py runs `duel rebuild`; call that\n")
    sys.exit(main.main(["rebuild"] + sys.argv[1:]))
