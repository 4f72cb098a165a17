#!/usr/bin/env bash
# The README's test command: builds what is needed and runs every test through ctest, then the
# sanitized trees: ASan+UBSan over the unit tests, TSan over the threaded tests, and a short
# libFuzzer run of each fuzz target. Exits non-zero when any test fails.
#
# Environment: POOCH_JOBS (default: cores), POOCH_FUZZ_SECONDS (default 20 per target),
#              POOCH_SKIP_SANITIZERS=1 to run only the main tree, unit tests included (for quick
#              local iterations).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${POOCH_JOBS:-$(nproc)}"
cuda="${CUDA_HOME:-/usr/local/cuda}"

# phase NAME: a heading with the minutes since the start, to see where CI's time goes.
phase() { echo "== $* ($((SECONDS / 60)) min $((SECONDS % 60)) s)"; }
# PyTorch's download and install (scripts/setup-torch.sh) waits on the network and the disk, so
# it runs beside the build of build/.
mkdir -p build
scripts/setup-torch.sh >build/setup-torch.log 2>&1 &
torch_setup=$!
phase "setup and build build/"
# The ASan+UBSan tree below builds and runs every unit test; build/ leaves them out unless that
# tree is skipped (POOCH_UNIT_TESTS in cmake/PoochTesting.cmake).
if [ "${POOCH_SKIP_SANITIZERS:-0}" = 1 ]; then unit_tests=ON; else unit_tests=OFF; fi
POOCH_UNIT_TESTS=$unit_tests scripts/setup.sh
phase "PyTorch for simgpu"
wait "$torch_setup" || { cat build/setup-torch.log >&2; exit 1; }
cat build/setup-torch.log
phase "tests (build/)"
ctest --test-dir build --output-on-failure -j "$jobs"

[ "${POOCH_SKIP_SANITIZERS:-0}" = 1 ] && exit 0

sanitized_tree() {  # dir, optimisation, cmake args, target, ctest label
  local dir=$1 opt=$2 args=$3 target=$4 label=$5
  [ -f "$dir/CMakeCache.txt" ] || cmake -S . -B "$dir" -DCUDAToolkit_ROOT="$cuda" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG" $args >/dev/null
  phase "build $dir"
  cmake --build "$dir" -j "$jobs" --target "$target"
  phase "tests ($dir, label $label)"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" -L "^$label\$"
}
# The ASan and TSan trees build at -O0: their unit tests are short, and -O0 compiles about a third
# faster than -O1 (docs/measurements.md, "Build and setup times"), which keeps CI
# inside its budget; the sanitizers find the same faults at either level. The fuzzer runs for a
# fixed time, so it is built at -O1 to try more inputs.
sanitized_tree build-asan -O0 "-DPOOCH_SANITIZE=address,undefined" tests_unit unit
sanitized_tree build-tsan -O0 "-DPOOCH_SANITIZE=thread" tests_tsan tsan
sanitized_tree build-fuzz -O1 "-DPOOCH_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++" \
  fuzzers fuzz
phase "done"
