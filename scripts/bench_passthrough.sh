#!/bin/sh
# bench_passthrough.sh [BUILD_DIR] [SIMGPU_LIB_DIR]: host time per call of small asynchronous
# CUDA calls with and without libpooch.so preloaded (POOCH_POLICY=off), to check that
# pass-through costs under 1 % (issue 4). Prints figures; it is not a test.
#
# First the cost of one hook alone: interpose_hook_overhead_bench calls a cudaEventRecord that
# does nothing (a stand-in library, no CUDA), so the difference is pooch's. Then real calls.
#
# On a machine without a GPU it runs on simgpu (SIMGPU_LIB_DIR, default BUILD_DIR/lib/simgpu),
# where a call itself costs more than on a GPU, so the percentage is a lower bound there: read
# the absolute difference (ns per call) too. On a GPU machine set SIMGPU_LIB_DIR=none.
set -eu
build=${1:-build}
libdir=${2:-$build/lib/simgpu}
bench=$build/bin/interpose_small_calls_bench
hook_bench=$build/bin/interpose_hook_overhead_bench
libpooch=$build/lib/libpooch.so
calls=${CALLS:-200000}
reps=${REPS:-5}
[ -x "$bench" ] || { echo "build the target interpose_small_calls_bench first ($bench)" >&2; exit 2; }
[ -e "$libpooch" ] || { echo "build the target pooch_preload first ($libpooch)" >&2; exit 2; }
if [ "$libdir" != none ]; then
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
fi

# Runs with and without the preload alternate (so that load from other processes hits both
# alike); each run reports the best of 5 timed rounds; printed are the medians and the minima
# over $reps runs (the minimum is the figure least disturbed by a busy machine).
stats() {  # stats FILE: "median min"
  sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1] }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -x "$hook_bench" ]; then
  : >"$tmp/plain"
  : >"$tmp/pooch"
  i=0
  while [ $i -lt "$reps" ]; do
    "$hook_bench" | awk '$1 == "ns_per_call" { print $2 }' >>"$tmp/plain"
    env LD_PRELOAD="$libpooch" POOCH_POLICY=off POOCH_SUMMARY=0 "$hook_bench" |
      awk '$1 == "ns_per_call" { print $2 }' >>"$tmp/pooch"
    i=$((i + 1))
  done
  set -- $(stats "$tmp/plain") $(stats "$tmp/pooch")
  awk -v a="$1" -v b="$3" 'BEGIN { printf "one pass-through hook: %.2f ns (call of an empty function %.2f ns, through pooch %.2f ns; medians)\n\n", b - a, a, b }'
fi
printf '%-8s %11s %11s %9s %9s %11s %11s %9s\n' kind "plain med" "pooch med" "diff" "overhead" \
  "plain min" "pooch min" "overhead"
for kind in memset event cudnn; do
  : >"$tmp/plain"
  : >"$tmp/pooch"
  i=0
  while [ $i -lt "$reps" ]; do
    "$bench" "$calls" "$kind" | awk '$1 == "ns_per_call" { print $2 }' >>"$tmp/plain"
    env LD_PRELOAD="$libpooch" POOCH_POLICY=off POOCH_SUMMARY=0 "$bench" "$calls" "$kind" |
      awk '$1 == "ns_per_call" { print $2 }' >>"$tmp/pooch"
    i=$((i + 1))
  done
  set -- $(stats "$tmp/plain") $(stats "$tmp/pooch")
  awk -v k="$kind" -v pm="$1" -v pn="$2" -v qm="$3" -v qn="$4" 'BEGIN {
    printf "%-8s %11.2f %11.2f %9.2f %8.2f%% %11.2f %11.2f %8.2f%%\n",
           k, pm, qm, qm - pm, 100 * (qm - pm) / pm, pn, qn, 100 * (qn - pn) / pn }'
done
