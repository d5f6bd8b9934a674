"""``python -m duel.host.cli`` (with scripts/ on the path) is ``duel``."""
import sys

from duel.host.cli import main

sys.exit(main.main())
