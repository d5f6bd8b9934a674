#!/usr/bin/env bash
# Fresh-machine check: how long `.ci/run` takes on this machine made as fresh as it can be made.
# It purges the Debian packages the test suite installs (docker.io, debootstrap, slurm-wlm, munge,
# hello, ...) with their state folders, empties apt's package lists and archive cache, removes the
# test caches (~/.cache/duel-tests: Docker data root, base image, 2019 wheels), the uv, pip,
# Snakemake and matplotlib caches and ~/.cache/duel-wheels, then clones the checkout's HEAD into a
# new temporary folder and runs `bash .ci/run` there (CI=true), timed, its output teed to a log.
# Last it prints what it left ("not removed: ..."), then one line: seconds, exit status and
# pytest's closing line. DESTRUCTIVE to this machine's Debian packages and caches, so it asks for
# --yes; it needs root, and refuses while a pytest runs. About 25 minutes on 2 cores.
#
#   bash benchmarks/fresh_machine.sh --yes [--repo DIR] [--json FILE]
#     DIR: the checkout to clone (default: the one this script lies in); FILE: the result as JSON
#     (seconds, exit status, pytest's closing line, commit, CPU, what was not removed)
set -euo pipefail

usage() {
  echo "usage: benchmarks/fresh_machine.sh --yes [--repo DIR] [--json FILE]" >&2
  echo "  purges the test suite's Debian packages and every cache it uses, then times .ci/run" >&2
  echo "  on a fresh clone; --yes says you mean it" >&2
  exit 2
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
yes=false
json=""
while (($#)); do
  case "$1" in
    --yes) yes=true; shift ;;
    --repo)
      (($# >= 2)) || usage
      repo="$(cd "$2" && pwd)"
      shift 2
      ;;
    --json)
      (($# >= 2)) || usage
      json="$2"
      shift 2
      ;;
    *) usage ;;
  esac
done
[[ "$yes" == true ]] || usage
if ((EUID != 0)); then
  echo "fresh_machine.sh: needs root (apt-get purge, /var/lib)" >&2
  exit 1
fi
if pgrep -f "pytest" >/dev/null; then
  echo "fresh_machine.sh: a pytest is running; it would lose its packages and caches" >&2
  exit 1
fi
git -C "$repo" rev-parse --verify HEAD >/dev/null

not_removed=()
note() { not_removed+=("$*"); }
apt=(apt-get -q -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive

# installed PACKAGE: dpkg knows it in any state but not-installed (config files left count).
installed() {
  local status
  status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)"
  [[ -n "$status" && "$status" != *" not-installed" ]]
}

# remove PATH...: rm -rf each, noting what is still there afterwards.
remove() {
  local path
  for path in "$@"; do
    [[ -e "$path" || -L "$path" ]] || continue
    rm -rf -- "$path" 2>/dev/null || true
    if [[ -e "$path" || -L "$path" ]]; then note "$path (rm -rf failed: busy or mounted?)"; fi
  done
}

echo "== Debian packages the suite installs"
packages=(docker.io containerd runc debootstrap slurm-wlm slurmctld slurmd slurm-client munge
  libmunge2 hello)
present=()
for package in "${packages[@]}"; do
  if installed "$package"; then present+=("$package"); fi
done
if ((${#present[@]})); then
  echo "purging: ${present[*]}"
  "${apt[@]}" purge -y "${present[@]}" || note "apt-get purge ${present[*]} failed"
fi
"${apt[@]}" autoremove --purge -y || note "apt-get autoremove --purge failed"
for package in "${packages[@]}"; do
  if installed "$package"; then note "package $package (still known to dpkg)"; fi
done
# Their programs, where another copy is still on PATH (e.g. a docker client the machine brought).
for program in docker dockerd containerd runc debootstrap munged mungekey slurmctld slurmd sbatch \
  squeue scancel sinfo hello; do
  if found="$(command -v "$program")"; then note "$found (not from the purged packages)"; fi
done

echo "== their state"
remove /var/lib/docker /var/lib/containerd /etc/docker /etc/munge /var/lib/munge /var/log/munge \
  /run/munge /var/spool/slurmd /var/spool/slurmctld /var/lib/slurm* /var/log/slurm* /etc/slurm \
  /etc/slurm-llnl /var/lock/duel-apt.lock /tmp/duel-apt.lock

echo "== apt's lists and archive cache"
find /var/lib/apt/lists -mindepth 1 -maxdepth 1 ! -name lock ! -name partial -exec rm -rf -- {} + ||
  note "some of /var/lib/apt/lists (rm failed)"
"${apt[@]}" clean || note "apt-get clean failed"

echo "== caches"
# The tests' own (Docker data root and base image, 2019 wheels) and the wheel caches the scripts
# keep (`duel image build` --wheel-cache: ~/.cache/duel-wheels in its usage).
remove "${DUEL_TEST_DOCKER_ROOT:-$HOME/.cache/duel-tests/docker}" \
  "${DUEL_TEST_WHEELS:-$HOME/.cache/duel-tests/wheels}" "$HOME/.cache/duel-tests" \
  "$HOME/.cache/duel-wheels"
uv="$(command -v uv || true)"
[[ -n "$uv" || ! -x "$repo/.venv/bin/uv" ]] || uv="$repo/.venv/bin/uv"
if [[ -n "$uv" ]]; then
  "$uv" cache clean || note "uv cache (uv cache clean failed)"
fi
remove "${UV_CACHE_DIR:-$HOME/.cache/uv}" "${PIP_CACHE_DIR:-$HOME/.cache/pip}" \
  "$HOME/.cache/snakemake" "$HOME/.cache/matplotlib"

echo "== a fresh clone of $repo at $(git -C "$repo" rev-parse --short HEAD)"
work="$(mktemp -d /tmp/duel-fresh.XXXXXX)"
clone="$work/duel"
git clone --quiet "$repo" "$clone"
if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]]; then
  echo "(uncommitted changes of $repo are not in the clone)"
fi
# A clone has none of these (all ignored), but the run must start without them.
remove "$clone/.era-envs" "$clone/.runners" "$clone"/.venv*

# What the project takes from the machine and this script leaves.
pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
if [[ -d "$pyenv_root/versions" ]]; then
  note "$pyenv_root/versions (the Pythons 3.11 and 3.7 the project needs from the machine)"
fi
for program in python3.11 python3.7 gcc g++ cc c++ make cmake git; do
  if found="$(command -v "$program")"; then note "$found (needed from the machine)"; fi
done
sources="$(python3 -m pip config list 2>/dev/null | grep -E 'find-links|index-url' | sort -u |
  tr '\n' ' ' || true)"
if [[ -n "$sources" ]]; then note "pip's configured package sources: $sources"; fi

echo "== bash .ci/run in $clone (log: $work/ci.log)"
start=$(date +%s)
set +e
(cd "$clone" && CI=true bash .ci/run) 2>&1 | tee "$work/ci.log"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s)

closing="$(grep -E '^=+ .+ in [0-9.]+s' "$work/ci.log" | tail -n 1 || true)"
for item in "${not_removed[@]}"; do echo "not removed: $item"; done
echo "fresh machine: $((end - start)) s, exit status $status," \
  "pytest: ${closing:-no closing line} (log: $work/ci.log)"
if [[ -n "$json" ]]; then
  printf '%s\n' "${not_removed[@]}" | python3 -c '
import json, platform, sys
seconds, status, closing, commit, log = sys.argv[1:6]
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
            if line.startswith("model name")), platform.processor())
json.dump({"seconds": int(seconds), "exit_status": int(status), "pytest": closing,
           "commit": commit, "cpu": cpu, "log": log,
           "not_removed": [line for line in sys.stdin.read().splitlines() if line]},
          open(sys.argv[6], "w"), indent=2)
' "$((end - start))" "$status" "$closing" "$(git -C "$clone" rev-parse HEAD)" "$work/ci.log" "$json"
fi
exit "$status"
