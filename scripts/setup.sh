#!/usr/bin/env bash
# Installs what pooch's build needs from Debian, finds the CUDA Toolkit, configures and builds
# into build/. Idempotent: a second run installs nothing and rebuilds only what changed.
#
# Usage: scripts/setup.sh            (build/ with the default RelWithDebInfo)
# Environment: CUDA_HOME (default /usr/local/cuda), POOCH_JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake clang libabsl-dev libunwind-dev libgtest-dev libgmock-dev
          nlohmann-json3-dev gnuplot-nox libzstd-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/cuda_runtime_api.h" ] || [ ! -f "$cuda/include/cudnn.h" ]; then
  echo "setup: no CUDA Toolkit with cuDNN at $cuda (set CUDA_HOME to the toolkit's folder)" >&2
  exit 2
fi

jobs="${POOCH_JOBS:-$(nproc)}"
# nvdisasm and cuobjdump from PyPI into build/cuda-tools (the kernel analysis, core/kernels, and
# its tests, which fail without them).
scripts/setup-cuda-tools.sh
# The Abseil that libpooch.so and the CLI link (position-independent, hidden; Note
# [Self-contained libpooch.so] in cmake/PoochSelfContained.cmake): downloaded here, once, from
# Debian's source packages, so that the build itself needs no network.
POOCH_JOBS="$jobs" scripts/build-abseil.sh build/abseil
# POOCH_UNIT_TESTS=ON|OFF, when set, configures build/ with or without its unit tests
# (cmake/PoochTesting.cmake; scripts/test.sh sets it).
unit_tests=()
[ -n "${POOCH_UNIT_TESTS:-}" ] && unit_tests=("-DPOOCH_UNIT_TESTS=$POOCH_UNIT_TESTS")
if [ ! -f build/CMakeCache.txt ] || ((${#unit_tests[@]})); then
  cmake -S . -B build -DCUDAToolkit_ROOT="$cuda" "${unit_tests[@]}" >/dev/null
fi
cmake --build build -j "$jobs"
