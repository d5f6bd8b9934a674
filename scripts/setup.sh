#!/usr/bin/env bash
# Create (or update) .venv with the pinned current era; with --tests, the test tools as well;
# with --slurm, also .venv-slurm: .venv's packages plus Snakemake's SLURM executor
# (envs/slurm.txt), kept out of .venv because importing it is slow where no SLURM answers.
# Safe to run again: pip installs only what is missing. Needs Python 3.11 (DUEL_PYTHON to override).
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=(-r envs/current-cpu.txt)
slurm=false
for option in "$@"; do
  case "$option" in
    --tests) requirements+=(-r envs/tests.txt) ;;
    --slurm) slurm=true ;;
    *)
      echo "usage: scripts/setup.sh [--tests] [--slurm]" >&2
      exit 2
      ;;
  esac
done

python="${DUEL_PYTHON:-$(command -v python3.11 || command -v python3)}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup.sh: $python is not Python 3.11; set DUEL_PYTHON to a Python 3.11 interpreter" >&2
  exit 1
fi
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${requirements[@]}"

if [[ "$slurm" == true ]]; then
  # The same interpreter as .venv, without a pip or setuptools of its own: .venv's packages
  # (pip included) are seen through a .pth file, so the workflow runs with exactly the pinned
  # stack and only the plugin is added here.
  base="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
  [[ -x .venv-slurm/bin/python ]] || "$base" -m venv --without-pip .venv-slurm
  main_site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  slurm_site="$(.venv-slurm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "import site; site.addsitedir('$main_site')" > "$slurm_site/duel-main-venv.pth"
  .venv-slurm/bin/python -m pip install --quiet --disable-pip-version-check -r envs/slurm.txt
  .venv-slurm/bin/python -m pip check --disable-pip-version-check > /dev/null
  # `.venv-slurm/bin/snakemake` = Snakemake from .venv, run by this interpreter.
  printf '#!/bin/sh\nexec "$(dirname "$0")/python" -m snakemake "$@"\n' > .venv-slurm/bin/snakemake
  chmod +x .venv-slurm/bin/snakemake
fi
