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

# A whole program's stream of small calls: cnn_train's ResNet-50 under SIMGPU_COMPUTE=timing runs
# no math, so its host time is the calls themselves (about 2,900 hooked calls per iteration).
# CPU time (user + sys) of the whole process, plain and with the pass-through preload, runs
# alternating; medians of $reps. Skipped on a GPU machine (SIMGPU_LIB_DIR=none): there the
# program's GPU time dominates.
cnn=$build/bin/cnn_train
if [ "$libdir" != none ] && [ -x "$cnn" ]; then
  iters=${ITERS:-80}
  python3 - "$cnn" "$libpooch" "$reps" "$iters" <<'PY'
import os, resource, statistics, subprocess, sys
cnn, libpooch, reps, iters = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = dict(os.environ, SIMGPU_COMPUTE="timing", SIMGPU_MEMORY="64GiB")
pooch = dict(base, LD_PRELOAD=libpooch, POOCH_POLICY="off", POOCH_SUMMARY="0")
def cpu(env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([cnn, "--model", "resnet50", "--batch", "64", "--iters", iters], env=env,
                   stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
plain, hooked = [], []
for _ in range(reps):
    plain.append(cpu(base))
    hooked.append(cpu(pooch))
p, q = statistics.median(plain), statistics.median(hooked)
print(f"\nwhole program: cnn_train resnet50 b64, {iters} iterations, SIMGPU_COMPUTE=timing")
print(f"  cpu seconds plain {p:.3f}  pass-through {q:.3f}  overhead {100 * (q - p) / p:+.2f}%"
      f"  (medians of {reps}; runs: plain {sorted(plain)}, pooch {sorted(hooked)})")
PY
fi
