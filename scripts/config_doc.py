"""Write config/README.md from the config schema: every key with its type, default and meaning.

    .venv/bin/python scripts/config_doc.py

The wording lives in config/schema/config.schema.yaml; this page is made from it
(duel/host/render/config_doc.py), and tests/test_config_doc.py checks it is up to date.
"""
import os
import sys

SCRIPTS = os.path.dirname(os.path.abspath(__file__))  # holds duel/
sys.path.insert(0, SCRIPTS)

from duel.host.render import config_doc  # noqa: E402

if __name__ == "__main__":
    sys.exit(config_doc.main())
