#!/usr/bin/env python
"""Another name for ``duel image build``, kept for the command lines that call this path."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # holds duel/

from duel.host.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.stderr.write("scripts/build_image.py runs `duel image build`; call that\n")
    sys.exit(main.main(["image", "build"] + sys.argv[1:]))
