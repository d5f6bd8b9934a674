#!/usr/bin/env bash
# Create (or update) .venv with the pinned current era; with --tests, the test tools as well.
# Safe to run again: pip installs only what is missing. Needs Python 3.11 (DUEL_PYTHON to override).
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=(-r envs/current-cpu.txt)
if [[ "${1:-}" == "--tests" ]]; then
  requirements+=(-r envs/tests.txt)
elif [[ -n "${1:-}" ]]; then
  echo "usage: scripts/setup.sh [--tests]" >&2
  exit 2
fi

python="${DUEL_PYTHON:-$(command -v python3.11 || command -v python3)}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup.sh: $python is not Python 3.11; set DUEL_PYTHON to a Python 3.11 interpreter" >&2
  exit 1
fi
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
