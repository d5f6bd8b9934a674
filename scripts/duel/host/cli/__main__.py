"""``python -m duel.host.cli`` is ``duel`` (the installed command runs the same)."""
import sys

from duel.host.cli import main

sys.exit(main.main())
