#!/usr/bin/env python
"""The ``duel`` command (duel/host/cli/); scripts/setup.sh puts a launcher of it in .venv/bin.

    .venv/bin/duel --help
    .venv/bin/python scripts/duel_cli.py --help      # the same, without the launcher
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # holds duel/

from duel.host.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main.main())
