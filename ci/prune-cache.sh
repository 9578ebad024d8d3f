#!/usr/bin/env bash
# Removes what tunebench's cache (ci/setup.sh's, outside the clone) no longer uses, so that a
# machine that keeps it between CI runs does not grow by a Python environment (~5.5 GB, torch) each
# time the requirements change, or by a compiled package (the compile knob's AOTInductor
# packages) for every model, mode and LibTorch ever compiled.
#
#   ci/prune-cache.sh [--days N] [--keep DIR] [--dry-run]
#
#   --days N     remove what was last used more than N days ago (default 14, or
#                $TUNEBENCH_CACHE_KEEP_DAYS; 0: everything but --keep and packages in use)
#   --keep DIR   never remove DIR (ci/setup.sh passes the environment it has just linked)
#   --dry-run    say what would be removed, remove nothing
#
# What it looks at, in ${TUNEBENCH_CACHE:-/var/cache/tunebench}:
#   venv-*/   Python environments; last used = the time of their .last-used file (ci/setup.sh
#             touches it on every run), else of the folder. An environment a setup is building
#             (no .complete yet) is left alone unless older than --days.
#   aoti/*/   compiled packages (TUNEBENCH_COMPILE_CACHE when set); last used = the folder's
#             time (the worker touches it whenever it loads the package). A package is removed
#             under its own lock (name.lock, the one the worker holds while compiling or
#             loading it), and skipped while another process holds that lock.
# ccache keeps its own size limit (ccache -s); studies/ is data and never removed.
set -euo pipefail

usage() { sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "ci/prune-cache.sh: $*" >&2; exit 2; }

days=${TUNEBENCH_CACHE_KEEP_DAYS:-14}
keep=""
dry=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --days) [[ $# -ge 2 ]] || die "--days needs a number of days"; days=$2; shift 2 ;;
    --keep) [[ $# -ge 2 ]] || die "--keep needs a folder"; keep=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (valid: --days N, --keep DIR, --dry-run, --help)" ;;
  esac
done
[[ "$days" =~ ^[0-9]+$ ]] || die "--days must be a whole number of days, not '$days'"

cache=${TUNEBENCH_CACHE:-/var/cache/tunebench}
aoti=${TUNEBENCH_COMPILE_CACHE:-$cache/aoti}
[[ -d "$cache" || -d "$aoti" ]] || { echo "prune: no cache at $cache"; exit 0; }
now=$(date +%s)
limit=$((days * 86400))
keep_real=""
[[ -n "$keep" && -e "$keep" ]] && keep_real=$(realpath "$keep")
removed=0
freed=0

# age_days PATH: whole days since PATH was last modified.
age_days() { echo $(((now - $(stat -c %Y "$1")) / 86400)); }

# remove PATH WHY: removes it (or says it would), counting what it frees.
remove() {
  local size
  size=$(du -sk "$1" 2>/dev/null | cut -f1)
  if [[ $dry == 1 ]]; then
    echo "prune: would remove $1 ($2, $((size / 1024)) MiB)"
  else
    rm -rf "$1"
    echo "prune: removed $1 ($2, $((size / 1024)) MiB)"
  fi
  removed=$((removed + 1))
  freed=$((freed + size))
}

# stale PATH: true when PATH was last used more than --days ago.
stale() { (( now - $(stat -c %Y "$1") > limit )) || (( days == 0 )); }

shopt -s nullglob
for venv in "$cache"/venv-*/; do
  venv=${venv%/}
  [[ -n "$keep_real" && "$(realpath "$venv")" == "$keep_real" ]] && continue
  stamp="$venv/.last-used"
  [[ -e "$stamp" ]] || stamp="$venv"
  stale "$stamp" || continue
  remove "$venv" "a Python environment last used $(age_days "$stamp") days ago"
done

if [[ -d "$aoti" ]]; then
  for package in "$aoti"/*/; do
    package=${package%/}
    stale "$package" || continue
    lock="$package.lock"
    age=$(age_days "$package")
    if [[ $dry == 1 ]]; then
      # Only asks whether the lock is free (flock's own descriptor, released at once); creates
      # no lock file where there is none.
      if [[ -e "$lock" ]] && ! flock -n "$lock" true; then
        echo "prune: would keep $package (in use: another process holds $lock)"
      else
        remove "$package" "a compiled package last used $age days ago"
      fi
      continue
    fi
    # Under the package's lock: a worker compiling or loading it holds that lock.
    exec {fd}>>"$lock"
    if flock -n "$fd"; then
      if stale "$package"; then
        # Its lock file stays (empty): a worker may be waiting on it, and a new file in its
        # place would let a second worker compile beside that one.
        remove "$package" "a compiled package last used $age days ago"
      fi
    else
      echo "prune: kept $package (in use: another process holds $lock)"
    fi
    exec {fd}>&-
  done
fi

if [[ $removed == 0 ]]; then
  where=$cache
  [[ "$aoti" == "$cache/aoti" ]] || where+=" and $aoti"
  echo "prune: nothing unused for more than $days days in $where"
elif [[ $dry == 1 ]]; then
  echo "prune: would free $((freed / 1024)) MiB ($removed folders)"
else
  echo "prune: freed $((freed / 1024)) MiB ($removed folders)"
fi
