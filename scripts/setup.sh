#!/usr/bin/env bash
# Create (or update) .venv with the pinned current era and the host's tools (envs/host.txt: the
# results store's DuckDB, the verdicts' SciPy); with --tests, the test tools as well;
# with --slurm, also .venv-slurm: .venv's packages plus Snakemake's SLURM executor
# (envs/slurm.txt), kept out of .venv because importing it is slow where no SLURM answers.
# Every lock file is complete and hashed: installed with hash checking and without resolution
# (--require-hashes --no-deps), then `pip check`. The installer is uv, pinned in envs/uv.txt and
# put into .venv first by pip; --pip installs with pip alone. Either way every module is compiled
# to bytecode at install (pip does by default; uv with --compile-bytecode): a cell is a fresh
# process, and where .pyc files are missing and cannot be written (PYTHONDONTWRITEBYTECODE, a
# read-only tree) each one would spend seconds compiling TensorFlow's sources before it starts.
# Then .venv/duel-env.json records the hash of every lock file installed (planning compares
# .venv with its lock: README, Exact environments), and Duel's own package is installed editable,
# with its `duel` command. Safe to run again. Needs Python 3.11 (DUEL_PYTHON to override).
set -euo pipefail
cd "$(dirname "$0")/.."

locks=(envs/current-cpu.txt envs/host.txt)
slurm=false
installer=uv
for option in "$@"; do
  case "$option" in
    --tests) locks+=(envs/tests.txt) ;;
    --slurm) slurm=true ;;
    --pip) installer=pip ;;
    *)
      echo "usage: scripts/setup.sh [--tests] [--slurm] [--pip]" >&2
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
pip=(.venv/bin/python -m pip --disable-pip-version-check)

uv_env=()
uv_options=()
if [[ "$installer" == uv ]]; then
  "${pip[@]}" install --quiet --require-hashes --no-deps -r envs/uv.txt
  locks+=(envs/uv.txt)
  # uv reads no pip configuration: hand it this machine's pip sources and CA bundle.
  while IFS= read -r line; do
    if [[ "$line" == SSL_CERT_FILE=* ]]; then uv_env+=("$line"); else uv_options+=("$line"); fi
  done < <(PYTHONPATH=scripts .venv/bin/python -m duel.host.stacks.pip_sources)
fi

# install PYTHON LOCK...: exactly the pins of the lock files, each file checked against its hash
# (with uv, also the options in the array `extra`).
extra=()
install() {
  local target="$1"
  shift
  local requirements=()
  for lock in "$@"; do requirements+=(-r "$lock"); done
  if [[ "$installer" == uv ]]; then
    env "${uv_env[@]}" .venv/bin/uv pip install --quiet --python "$target" --require-hashes \
      --no-deps --compile-bytecode "${uv_options[@]}" "${extra[@]}" "${requirements[@]}"
  else
    "$target" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
      "${requirements[@]}"
  fi
}

# The CPU build of torch (a +cpu pin) is on PyTorch's own CPU index, not the default one: where
# this machine's sources lack it, uv's torch backend knows that index (DUEL_TORCH_INDEX: a
# mirror of it in its place; duel.host.stacks.pip_sources).
if ! install .venv/bin/python "${locks[@]}"; then
  if [[ "$installer" != uv ]]; then
    echo "setup.sh: installing ${locks[*]} with pip failed; without --pip, uv finds the CPU" \
      "build of torch on PyTorch's CPU index" >&2
    exit 1
  fi
  echo "setup.sh: this machine's package sources lack a pin; again, with torch's CPU index" >&2
  mapfile -t extra < <(PYTHONPATH=scripts .venv/bin/python -m duel.host.stacks.pip_sources \
    --torch-cpu)
  if ! install .venv/bin/python "${locks[@]}"; then
    echo "setup.sh: installing ${locks[*]} failed from this machine's package sources and" \
      "from PyTorch's CPU index (uv's message above)" >&2
    exit 1
  fi
fi
"${pip[@]}" check > /dev/null
# Duel itself (pyproject.toml), editable, built by the locked setuptools: .venv/bin/duel. Kept
# where .venv already imports this checkout's package (a checkout whose scripts/ is a link to
# it, as the README's test makes, must not point .venv at its own path).
here="$(realpath scripts/duel)"
installed="$(.venv/bin/python -I -c 'import duel, os; print(os.path.realpath(duel.__path__[0]))' \
  2> /dev/null || true)"
if [[ "$installed" == "$here" && -x .venv/bin/duel ]]; then
  :
elif [[ "$installer" == uv ]]; then
  env "${uv_env[@]}" .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps \
    --no-build-isolation "${uv_options[@]}" --editable .
else
  "${pip[@]}" install --quiet --no-deps --no-build-isolation --editable .
fi
.venv/bin/python scripts/install/setup_marker.py .venv "$installer" "${locks[@]}"

if [[ "$slurm" == true ]]; then
  # The same interpreter as .venv, without a pip or setuptools of its own: .venv's packages
  # (pip included) are seen through a .pth file, so the workflow runs with exactly the pinned
  # stack and only the plugin is added here.
  base="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
  [[ -x .venv-slurm/bin/python ]] || "$base" -m venv --without-pip .venv-slurm
  main_site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  slurm_site="$(.venv-slurm/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "import site; site.addsitedir('$main_site')" > "$slurm_site/duel-main-venv.pth"
  install .venv-slurm/bin/python envs/slurm.txt
  .venv-slurm/bin/python -m pip check --disable-pip-version-check > /dev/null
  .venv-slurm/bin/python scripts/install/setup_marker.py .venv-slurm "$installer" envs/slurm.txt
  # `.venv-slurm/bin/snakemake` = Snakemake from .venv, run by this interpreter.
  printf '#!/bin/sh\nexec "$(dirname "$0")/python" -m snakemake "$@"\n' > .venv-slurm/bin/snakemake
  chmod +x .venv-slurm/bin/snakemake
fi
