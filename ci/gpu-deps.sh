#!/usr/bin/env bash
# Prepares the folder that ci/gpu-check.sh builds with on a GPU machine without network: the
# headers, CMake configs and libraries of tunebench's non-torch dependencies, taken from Debian's
# packages with `apt-get download` and unpacked with `dpkg -x` into that folder (never into /).
#   ci/gpu-deps.sh [DIR]      default DIR: shared/gpu-deps (inside the repository, git-ignored)
# Needs apt-get's package lists (it runs `apt-get update` once if a download fails).
set -euo pipefail
cd "$(dirname "$0")/.."

dest=$(realpath -m "${1:-shared/gpu-deps}")
case "$dest" in
  / | /usr | /usr/* | /etc | /etc/*) echo "ci/gpu-deps.sh: refusing to unpack into $dest" >&2; exit 2 ;;
esac
# Header-only (nlohmann-json, CLI11, fmt is used header-only) and libraries with their runtime
# packages, which the CMake configs name.
PACKAGES=(
  nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9
  libsqlitecpp-dev libsqlite3-dev libsqlite3-0
  libbenchmark-dev libbenchmark1debian
  libnuma-dev libnuma1
  libssl-dev libssl3
)
# Boost is used header-only (Boost.Math in harness/analysis/detect.cpp): of its 160 MB of headers only those
# our sources include, what they include in turn (as g++ -M lists them), boost/config for other
# compilers, and the CMake configs are kept.
BOOST=libboost1.74-dev
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "[gpu-deps] downloading ${#PACKAGES[@]} Debian packages"
if ! (cd "$work" && apt-get download -q "${PACKAGES[@]}" "$BOOST" >/dev/null 2>"$work/err"); then
  apt-get update -qq
  (cd "$work" && apt-get download -q "${PACKAGES[@]}" "$BOOST" >/dev/null)
fi
rm -rf "$dest"
mkdir -p "$dest"
for deb in "$work"/*.deb; do
  if [[ $(basename "$deb") == "$BOOST"_* ]]; then
    dpkg -x "$deb" "$work/boost"
  else
    dpkg -x "$deb" "$dest"
  fi
done
# Every tracked source file (the folders moved in the restructuring; a fixed list of them broke).
boost_includes=$(git ls-files '*.cpp' '*.h' | xargs grep -hoE '#include <boost/[^>]+>' | sort -u)
[[ -n $boost_includes ]] || { echo "ci/gpu-deps.sh: no Boost include found in the sources" >&2; exit 2; }
(
  cd "$work/boost"
  printf '%s\n' "$boost_includes" |
    g++ -M -std=c++17 -x c++ -I usr/include - -o - | tr ' \\' '\n\n' | grep '^usr/include/boost/' |
    sort -u | xargs cp --parents -t "$dest"
  cp -r --parents usr/include/boost/config usr/include/boost/version.hpp \
    usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0 usr/lib/x86_64-linux-gnu/cmake/boost_headers-1.74.0 \
    usr/lib/x86_64-linux-gnu/cmake/BoostDetectToolset-1.74.0.cmake "$dest"
)
# Links become plain files: the folder is copied to machines by tools that may not keep links.
find "$dest" -type l | while read -r link; do
  target=$(readlink -f "$link")
  if [[ -f "$target" ]]; then
    rm "$link"
    cp "$target" "$link"
  else
    rm "$link"
  fi
done
rm -rf "$dest/usr/share/doc" "$dest/usr/share/lintian" "$dest/usr/share/man"
{
  echo "# unpacked by ci/gpu-deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ), $(. /etc/os-release && echo "$PRETTY_NAME")"
  (cd "$work" && ls -1 ./*.deb | sed 's|^\./||')
} >"$dest/MANIFEST"
echo "[gpu-deps] $(du -sh "$dest" | cut -f1) in $dest"
