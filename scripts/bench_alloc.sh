#!/bin/sh
# bench_alloc.sh [BUILD_DIR]: host time of cudaMalloc and cudaFree per size, without pooch and
# under pooch (demand and pooch policies, no memory pressure), and of cudaMallocAsync and
# cudaFreeAsync under pooch (the calls of PyTorch's cudaMallocAsync backend, which `pooch run`
# selects: Note [PyTorch's allocator] in cli/torch_allocator.h), on simgpu unless
# SIMGPU_LIB_DIR=none (a real GPU). The target: median under 2 µs of host time on simgpu. A benchmark, not a test.
set -eu
build=${1:-build}
bench=$build/bin/interpose_alloc_bench
pooch=$build/bin/pooch
[ -x "$bench" ] && [ -x "$pooch" ] || { echo "build the targets interpose_alloc_bench and pooch first" >&2; exit 2; }
libdir=${SIMGPU_LIB_DIR:-$build/lib/simgpu}
if [ "$libdir" != none ]; then
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  export SIMGPU_MEMORY=${SIMGPU_MEMORY:-16GiB}
fi
pairs=${PAIRS:-2000}
echo "== without pooch"
"$bench" "$pairs"
echo "== under pooch run (POOCH_POLICY=demand, no memory pressure)"
"$pooch" run --no-summary --policy demand -- "$bench" "$pairs"
echo "== under pooch run (POOCH_POLICY=pooch, the default: the profiler sees every call too)"
"$pooch" run --no-summary --policy pooch -- "$bench" "$pairs"
echo "== under pooch run (POOCH_POLICY=pooch), cudaMallocAsync/cudaFreeAsync on the legacy stream"
ALLOC_BENCH_API=async "$pooch" run --no-summary --policy pooch -- "$bench" "$pairs"
