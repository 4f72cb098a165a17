#!/bin/sh
# bench_overhead.sh [BUILD_DIR]: the interposer's host time per intercepted compute call once
# profiling is over (issue 5: median under 1 µs), on simgpu unless SIMGPU_LIB_DIR=none (a real
# GPU). interpose_steady_state_bench runs a training-like loop of cudnnAddTensor calls; it runs
# without pooch, under POOCH_POLICY=off (pass-through), demand (residency manager only) and
# pooch (plus the iteration tracker and the plan's actions), alternating, REPS times each. The
# figures are the differences against the run without pooch, of the medians and of the minima
# over the runs. A benchmark, not a test.
set -eu
build=${1:-build}
bench=$build/bin/interpose_steady_state_bench
pooch=$build/bin/pooch
[ -x "$bench" ] && [ -x "$pooch" ] || {
  echo "build the targets interpose_steady_state_bench and pooch first" >&2
  exit 2
}
libdir=${SIMGPU_LIB_DIR:-$build/lib/simgpu}
if [ "$libdir" != none ]; then
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  export SIMGPU_MEMORY=${SIMGPU_MEMORY:-1GiB}
fi
reps=${REPS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench_overhead.XXXXXX")
trap 'rm -rf "$out"' EXIT
i=0
while [ $i -lt "$reps" ]; do
  "$bench" | awk '{ print $2 }' >>"$out/none"
  for policy in off demand pooch; do
    "$pooch" run --no-summary --policy "$policy" -- "$bench" | awk '{ print $2 }' >>"$out/$policy"
  done
  i=$((i + 1))
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
minimum() { sort -n "$1" | head -n 1; }
diff() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
# The minimum over runs is the figure least disturbed by the machine (simgpu's worker thread
# shares the cores with the program); the median shows the spread.
base=$(median "$out/none")
base_min=$(minimum "$out/none")
printf '%-8s %12s %14s %12s %14s\n' run median_ns overhead_ns min_ns overhead_ns
printf '%-8s %12s %14s %12s %14s\n' none "$base" - "$base_min" -
for policy in off demand pooch; do
  m=$(median "$out/$policy")
  n=$(minimum "$out/$policy")
  printf '%-8s %12s %14s %12s %14s\n' "$policy" "$m" "$(diff "$m" "$base")" "$n" "$(diff "$n" "$base_min")"
done
