#!/usr/bin/env bash
# How long `pooch plan` takes: a benchmark, not a test (it never fails on a slow result).
#
#   scripts/bench_plan.sh                 # builds build/bin/pooch if needed, 5 repetitions
#   BUILD_DIR=build-rel REPS=9 scripts/bench_plan.sh
#
# Cases (the PoocH paper reports about 2 minutes of profiling and planning for 3D ResNeXt-101,
# §5.2; our targets, from issue 12, are for the run-time planner alone (its refinement budget,
# --refine 2000), on one core, v100-pcie3, 16 GiB):
#   resnet50 batch 640, policy pooch                        target < 0.3 s
#   resnext101-3d batch 256 (16x112x112), policy pooch      target < 0.3 s
#   resnext101-3d 256x320x320 (24 GiB), pooch               (for information)
#   resnet50 batch 640, --policy all                        (for information)
# For each: the median wall and CPU (user + system) seconds of the whole command over REPS runs,
# pinned to one core when taskset exists, and the planner's own count of simulations. On a shared
# machine wall time includes waiting for a core; CPU time is the better figure there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
REPS=${REPS:-5}
POOCH=$BUILD_DIR/bin/pooch

if [[ ! -x $POOCH ]]; then
  echo "building $POOCH ..." >&2
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  fi
  cmake --build "$BUILD_DIR" --target pooch -j"$(nproc)" >&2
fi

PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c 0); fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# bench NAME TARGET_SECONDS ARGS...
bench() {
  local name=$1 target=$2
  shift 2
  local walls=() cpus=() sims="" out
  out=$(mktemp)
  for ((i = 0; i < REPS; i++)); do
    local t
    t=$( { TIMEFORMAT='%R %U %S'; time "${PIN[@]}" "$POOCH" plan "$@" >"$out" 2>&1; } 2>&1) || {
      echo "$name: pooch plan failed:" >&2
      cat "$out" >&2
      rm -f "$out"
      return 1
    }
    read -r wall user sys <<<"$t"
    walls+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.3f", u + s}')")
  done
  sims=$(grep -oE '[0-9]+ simulations' "$out" | head -1 || true)
  rm -f "$out"
  local wall_med cpu_med
  wall_med=$(printf '%s\n' "${walls[@]}" | median)
  cpu_med=$(printf '%s\n' "${cpus[@]}" | median)
  local verdict="-"
  if [[ $target != "-" ]]; then
    verdict=$(awk -v c="$cpu_med" -v t="$target" 'BEGIN {print (c < t) ? "within" : "OVER"}')
    verdict="$verdict target $target s"
  fi
  printf '%-44s wall %7.3f s  cpu %7.3f s  %-18s %s\n' "$name" "$wall_med" "$cpu_med" \
    "${sims:-}" "$verdict"
}

echo "pooch plan benchmark: median of $REPS runs, ${PIN[*]:-unpinned}, $(nproc) cores," \
  "load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')"
bench "resnet50 b640 v100-pcie3 pooch (run-time)" 0.3 \
  --model resnet50 --batch 640 --machine v100-pcie3 --policy pooch --refine 2000
bench "resnext101-3d b256 v100-pcie3 pooch (run-time)" 0.3 \
  --model resnext101-3d --batch 256 --machine v100-pcie3 --policy pooch --refine 2000
bench "resnext101-3d 256x320x320 v100-pcie3 pooch" - \
  --model resnext101-3d --frames 256 --image 320 --machine v100-pcie3 --policy pooch
bench "resnet50 b640 v100-nvlink2 pooch" - \
  --model resnet50 --batch 640 --machine v100-nvlink2 --policy pooch
bench "resnet50 b640 v100-pcie3 all policies" - \
  --model resnet50 --batch 640 --machine v100-pcie3 --policy all
