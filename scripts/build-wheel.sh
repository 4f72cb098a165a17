#!/usr/bin/env bash
# Builds the pooch wheel: dist/pooch-VERSION-py3-none-manylinux_2_34_x86_64.whl, holding the
# `pooch` binary and libpooch.so inside the Python package pooch (python/), with a `pooch`
# command and `python -m pooch` that run the binary. One wheel for every CPython: no extension
# module, and no dependency, so that it installs offline from the file alone
# (`pip install --no-index pooch-*.whl`).
#
# VERSION is project(pooch VERSION ...) in CMakeLists.txt, as the build tree was configured.
# The binaries are the build tree's, stripped of debug info; both are self-contained (Note
# [Self-contained libpooch.so] in cmake/PoochSelfContained.cmake), so the platform tag is the
# oldest glibc and libstdc++ whose symbol versions cover theirs: this script refuses to tag a
# binary that needs a newer one. The backend is hatchling, pinned with hashes in
# scripts/wheel-requirements.txt and installed into BUILD/wheel-venv on first use (the network
# is needed then, not after).
#
# Usage: scripts/build-wheel.sh [--build-dir DIR] [--out DIR] [--prebuilt]
#   --build-dir DIR  the configured build tree (default build)
#   --out DIR        where the wheel goes (default dist)
#   --prebuilt       take DIR/bin/pooch and DIR/lib/libpooch.so as they are, without building
#                    the targets pooch and pooch_preload first (the wheel test)
# Environment: PYTHON (default python3) for the build venv.
# Exit status: 0 and the wheel's path on stdout; 1 a step failed (one line on stderr); 2 bad
# arguments; 77 the build requirements could not be installed (no network, say).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=$root/dist
prebuilt=0
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$(cd "${2:?--build-dir needs a folder}" && pwd); shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --prebuilt) prebuilt=1; shift ;;
    *) echo "build-wheel: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
die() { echo "build-wheel: $*" >&2; exit 1; }

# The platform tag and the newest symbol versions it allows (PEP 600: the glibc of the name; the
# libstdc++ of manylinux_2_34's reference distribution, AlmaLinux 9: GCC 11).
platform=manylinux_2_34_x86_64
max_glibc=2.34
max_glibcxx=3.4.29
max_cxxabi=1.3.13

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt" 2>/dev/null) || true
[ -n "$version" ] || die "$build is not a build tree configured from a CMakeLists.txt with project(pooch VERSION ...)"
if [ "$prebuilt" = 0 ]; then
  cmake --build "$build" --target pooch pooch_preload >&2 || die "building pooch and pooch_preload failed"
fi
binary=$build/bin/pooch
library=$build/lib/libpooch.so
for f in "$binary" "$library"; do
  [ -f "$f" ] || die "$f is missing (build the targets pooch and pooch_preload)"
done

# newest PREFIX FILE: the newest PREFIX_x.y[.z] symbol version FILE asks of the dynamic linker.
newest() {
  { objdump -T "$2" | grep -oE "\b$1_[0-9]+(\.[0-9]+)*\b" || true; } | sed "s/^$1_//" | sort -uV | tail -n 1
}
# at_most A B: version A <= version B.
at_most() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1)" = "$2" ]; }
for f in "$binary" "$library"; do
  for pair in GLIBC:$max_glibc GLIBCXX:$max_glibcxx CXXABI:$max_cxxabi; do
    prefix=${pair%%:*}
    allowed=${pair#*:}
    need=$(newest "$prefix" "$f")
    [ -z "$need" ] || at_most "$need" "$allowed" ||
      die "$f needs ${prefix}_$need, newer than $platform allows (${prefix}_$allowed)"
  done
done

# The backend's venv, left alone while its stamp names the same requirements.
venv=$build/wheel-venv
requirements=$root/scripts/wheel-requirements.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if ! [ -x "$venv/bin/python" ] || [ "$(cat "$venv/.pooch-requirements" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv" || die "cannot create $venv"
  if ! "$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --no-deps \
      --require-hashes -r "$requirements" >&2; then
    rm -rf "$venv"
    echo "build-wheel: cannot install the build requirements ($requirements) into $venv" >&2
    exit 77
  fi
  echo "$want" >"$venv/.pooch-requirements"
fi

# Staging: the package, its version, and the binaries where `pooch run` looks for the library
# (cli/run_command.cc: ../lib/libpooch.so from the binary's folder).
stage=$(mktemp -d "$build/wheel-stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp -r "$root/python/." "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
printf '__version__ = "%s"\n' "$version" >"$stage/pooch/_version.py"
mkdir -p "$stage/pooch/bin" "$stage/pooch/lib"
strip --strip-debug -o "$stage/pooch/bin/pooch" "$binary"
strip --strip-debug -o "$stage/pooch/lib/libpooch.so" "$library"
chmod 755 "$stage/pooch/bin/pooch" "$stage/pooch/lib/libpooch.so"

mkdir -p "$out"
out=$(cd "$out" && pwd)
wheel=$(cd "$stage" && POOCH_WHEEL_PLATFORM=$platform \
  "$venv/bin/python" -c 'import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))' \
  "$out") || die "hatchling failed to build the wheel"
expected=pooch-$version-py3-none-$platform.whl
[ "$wheel" = "$expected" ] || die "hatchling wrote $wheel, not $expected"
echo "build-wheel: $out/$wheel, $(du -k "$out/$wheel" | cut -f1) KiB" >&2
echo "$out/$wheel"
