#!/usr/bin/env bash
# An installed tunebench works without its checkout. `cmake --install` into a temporary prefix;
# then, in a mount namespace where the checkout is hidden under an empty tmpfs, the installed
# binary runs a tiny suite (its workers, the stored run, `show`) and renders its report with the
# report package it installed; with --package, cpack makes a .deb holding the same files.
#   tests/install_prefix.sh BUILD_DIR SOURCE_DIR [--package]
# Needs root (the mount namespace), as CI has.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
package=${3:-}
fail() { echo "install_prefix: $*" >&2; exit 1; }

tmp=$(mktemp -d /tmp/tunebench-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[[ "$tmp" != "$source"* ]] || fail "the temporary folder $tmp is inside the checkout"

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || {
  cat "$tmp/install.log" >&2
  fail "cmake --install failed"
}
for f in bin/tunebench share/tunebench/.tunebench-installed share/tunebench/suites/smoke.json \
  share/tunebench/reports/render.py share/tunebench/models/python/worker.py; do
  [[ -e "$tmp/prefix/$f" ]] || fail "the prefix lacks $f"
done
cp "$source/tests/suites/mini.json" "$tmp/suite.json"

# The checkout out of reach: an empty tmpfs over it, in this namespace only.
unshare --mount --propagation private bash -euo pipefail -c '
  source=$1 tmp=$2
  mount -t tmpfs tunebench-hidden "$source"
  [[ ! -e "$source/CMakeLists.txt" ]] || { echo "the checkout is still visible" >&2; exit 1; }
  cd "$tmp"
  prefix/bin/tunebench run --suite suite.json --db db.sqlite --quiet > run.txt 2>&1 ||
    { cat run.txt >&2; exit 1; }
  prefix/bin/tunebench show latest --db db.sqlite > show.txt
  # A suite named without a folder is one the prefix ships.
  prefix/bin/tunebench run --suite smoke --dry-run --db plan.sqlite > plan.txt 2>&1 ||
    { cat plan.txt >&2; exit 1; }
  prefix/bin/tunebench report --db db.sqlite --out report > report.txt 2>&1 ||
    { cat report.txt >&2; exit 1; }
' _ "$source" "$tmp" || fail "the installed tool did not run, show and report without the checkout"

grep -q "no_grad" "$tmp/show.txt" || fail "show printed no no_grad experiment: $(cat "$tmp/show.txt")"
# (with the checkout hidden, the prefix's suites/smoke.json is the only one it can have read)
grep -q "^suite smoke: " "$tmp/plan.txt" ||
  fail "run --suite smoke did not plan the prefix's suite: $(head -5 "$tmp/plan.txt")"
[[ -s "$tmp/report/report.html" ]] || fail "no report.html: $(cat "$tmp/report.txt")"
# The installed binary read its report package from the prefix, and stored the revision it was
# built from (it has no .git beside it).
revision=$(sqlite3 "$tmp/db.sqlite" "SELECT git_revision FROM runs")
[[ "$revision" =~ ^[0-9a-f]{40}$ || "$revision" == unknown ]] ||
  fail "the installed run recorded git revision '$revision'"
echo "install_prefix: installed, ran $(sqlite3 "$tmp/db.sqlite" "SELECT COUNT(*) FROM trials") trials and rendered the report with the checkout hidden"

if [[ "$package" == --package ]]; then
  (cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -B "$tmp/package" > cpack.log 2>&1) || {
    cat "$tmp/cpack.log" >&2
    fail "cpack failed"
  }
  deb=$(ls "$tmp"/package/*.deb 2>/dev/null | head -n1)
  [[ -n "$deb" ]] || fail "cpack made no .deb: $(cat "$tmp/cpack.log")"
  contents=$(dpkg-deb -c "$deb")
  for f in ./usr/bin/tunebench ./usr/share/tunebench/.tunebench-installed \
    ./usr/share/tunebench/suites/smoke.json ./usr/share/tunebench/reports/render.py \
    ./usr/share/tunebench/models/python/worker.py; do
    grep -qF " $f" <<<"$contents" || fail "the .deb lacks $f"
  done
  echo "install_prefix: $(basename "$deb"): $(dpkg-deb -f "$deb" Depends | cut -c1-120)…"
fi
