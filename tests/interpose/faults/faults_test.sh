#!/bin/sh
# Fault and trace checks of libpooch.so on simgpu, registered by faults.cmake (which says what
# each case checks).
#   faults_test.sh CASE LIBPOOCH SIMGPU_LIB_DIR FAULT_PROBE [POOCH CNN_TRAIN CHECK_TRACE]
# Exit 0 on success; otherwise prints what failed and exits 1.
#
# Counting the calls SIMGPU_FAIL names (fault_probe.cc says what each step does). The probe
# fills N buffers of B MiB under POOCH_MEMORY_LIMIT = R * B MiB, so:
#   - each fill cudaMalloc creates one chunk (cuMemCreate + cuMemMap): N calls each during the
#     fill, none for swap-ins (nothing is read back before the fault step);
#   - buffers 0 .. N-R-1 are swapped out during the fill, each into a pinned buffer of its own
#     (the host pool reuses a buffer only after a swap-in gives it back): N-R cuMemHostAlloc calls.
# So call N+1 of cuMemCreate/cuMemMap is the fault step's own, and call N-R+1 of cuMemHostAlloc
# is the fault step's eviction: N-R swap-outs succeeded before it (checked in the summary, and
# simgpu's own "SIMGPU_FAIL: call K" line shows that the fault fired where intended).
set -u
case_name=$1
libpooch=$2
libdir=$3
probe=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/faults_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../../case_helpers.sh"

for lib in libcuda.so.1 libcudart.so.13; do
  [ -e "$libdir/$lib" ] || fail "simgpu library $libdir/$lib is missing (build the simgpu targets)"
done
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# The caller's POOCH_* and SIMGPU_* variables must not change what a case checks.
for v in $(env | sed -n 's/^\(POOCH_[A-Z_]*\)=.*/\1/p;s/^\(SIMGPU_[A-Z_]*\)=.*/\1/p'); do
  unset "$v"
done
# The checks read the summary's detailed lines, printed at POOCH_LOG=info (Note [Summary in
# words] in interpose/process/summary_words.h).
POOCH_LOG=info
export POOCH_LOG
SIMGPU_HAZARDS=error
export SIMGPU_HAZARDS

N=6          # buffers
B=4          # MiB each (a multiple of simgpu's 2 MiB granularity: no rounding)
R=2          # buffers that fit under the limit
LIMIT=$((R * B))MiB

# summary NAME FIELD: a number from the summary's "swaps:" line ("out", "in", "oom", ...).
summary() {
  awk -v f="$2" '$2 == "swaps:" { for (i = 3; i < NF; ++i) if ($i == f) { print $(i + 1); exit } }' \
    "$work/$1.err"
}

# probe NAME EXPECT_STEP_CODE MODE EXPECT [BIG] under pooch with SIMGPU_FAIL=$fault (may be
# empty); checks what every fault case must hold.
probe() {
  name=$1
  want_code=$2
  shift 2
  run "$name" env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT="$LIMIT" \
    ${fault:+SIMGPU_FAIL=$fault} "$probe" "$1" $N $B "$2" ${3:+"$3"}
  [ "$rc" -lt 128 ] || fail "$name: killed by signal $((rc - 128))"
  [ "$rc" -eq 0 ] || fail "$name: probe exit $rc"
  line=$(grep '^fault_probe ' "$work/$name.out")
  [ -n "$line" ] || fail "$name: no result line"
  echo "$line" | grep -q " step [A-Za-z]* ($want_code) " || fail "$name: step code: $line"
  echo "$line" | grep -q ' failures 0$' || fail "$name: $line"
  grep -i 'hazard' "$work/$name.err" && fail "$name: simgpu reported a hazard"
  # stderr: the summary, simgpu's line about the injected fault, and at most one other line,
  # from pooch (the program itself prints nothing there when every check holds).
  not_summary "$work/$name.err" | grep -v -e '^simgpu: SIMGPU_FAIL: ' >"$work/$name.other"
  [ "$(wc -l <"$work/$name.other")" -le 1 ] || fail "$name: more than one unexpected stderr line"
  if [ -s "$work/$name.other" ]; then
    grep -q '^pooch: ' "$work/$name.other" || fail "$name: stderr line not from pooch"
  fi
  if [ -n "${fault:-}" ]; then
    api=${fault%:*}
    k=${fault#*:}
    grep -q "^simgpu: SIMGPU_FAIL: call $k of $api fails" "$work/$name.err" ||
      fail "$name: the fault $fault did not fire"
  fi
  outs=$(summary "$name" out)
  [ "${outs:-0}" -ge $((N - R)) ] || fail "$name: ${outs:-no} swap-outs, want >= $((N - R))"
  verified=$(echo "$line" | sed -n 's/.* verified \([0-9]*\) bytes.*/\1/p')
  report="$report
  $name: $line; swaps out $outs in $(summary "$name" in) oom $(summary "$name" oom)"
}

report=""
case $case_name in
host_alloc)
  # Control: without a fault, the op swaps buffer 0 in and succeeds.
  fault="" probe control 0 op ok
  # The fault step's only possible eviction cannot get its pinned buffer: the op fails with an
  # out-of-memory code after N-R swap-outs succeeded; nothing is lost, the retry works.
  fault=cuMemHostAlloc:$((N - R + 1)) probe op_fault 2 op oom
  [ "$(summary op_fault oom)" -ge 1 ] || fail "op_fault: the summary counts no oom"
  [ "$verified" -eq $(((N + 2) * B << 20)) ] || fail "op_fault: verified $verified bytes"
  # Mid-fill (second swap-out): another buffer can be evicted instead, so pooch routes around
  # the fault; the program sees no error at all and keeps every byte.
  fault=cuMemHostAlloc:2 probe fill_fault 0 alloc ok
  [ "$verified" -eq $(((2 * N + 1) * B << 20)) ] || fail "fill_fault: verified $verified bytes"
  ;;

mem_create)
  for api in cuMemCreate cuMemMap; do
    # At an allocation (after the eviction it needed succeeded) and at a swap-in.
    fault=$api:$((N + 1)) probe "${api}_alloc" 2 alloc oom
    [ "$verified" -eq $(((2 * N + 1) * B << 20)) ] || fail "${api}_alloc: verified $verified bytes"
    fault=$api:$((N + 1)) probe "${api}_swap_in" 2 op oom
    [ "$verified" -eq $(((N + 2) * B << 20)) ] || fail "${api}_swap_in: verified $verified bytes"
  done
  ;;

over_limit)
  # Larger than the whole limit: out of memory at once, the others intact.
  fault="" probe big 2 big oom $((R * B + B))
  [ "$verified" -eq $((N * B << 20)) ] || fail "big: verified $verified bytes"
  # Control: the same request under a limit it fits in.
  LIMIT=$(((R + 3) * B))MiB fault="" probe fits 0 big ok $((R * B + B))
  ;;

trace)
  pooch=$5
  cnn_train=$6
  check=$7
  command -v python3 >/dev/null || fail "python3 is needed to check the trace"
  # The probe: every swap completes while the program runs, so the counts must match exactly.
  run probe_trace "$pooch" run --policy demand --memory-limit $LIMIT --trace "$work/probe.json" \
    -- "$probe" op $N $B ok
  [ "$rc" -eq 0 ] || fail "probe under pooch run --trace: exit $rc"
  grep -i 'hazard' "$work/probe_trace.err" && fail "simgpu reported a hazard"
  python3 "$check" "$work/probe.json" --limit $((R * B << 20)) --summary "$work/probe_trace.err" \
    --min-swaps 1 >"$work/check_probe.out" 2>&1 || fail "probe trace: $(cat "$work/check_probe.out")"
  report="$report
  probe: $(cat "$work/check_probe.out")"
  # cnn_train tiny on a simgpu at 70 % of its in-core peak (as interpose_demand), 2 iterations.
  run incore "$cnn_train" --model tiny --batch 256 --iters 2
  [ "$rc" -eq 0 ] || fail "cnn_train in-core: exit $rc"
  peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$work/incore.out")
  [ -n "$peak" ] || fail "cnn_train in-core: no peak_device_bytes"
  run cnn_trace env SIMGPU_MEMORY=$((peak * 70 / 100)) "$pooch" run --policy demand \
    --trace "$work/cnn.json" -- "$cnn_train" --model tiny --batch 256 --iters 2
  [ "$rc" -eq 0 ] || fail "cnn_train under pooch run --trace: exit $rc"
  grep -i 'hazard' "$work/cnn_trace.err" && fail "simgpu reported a hazard"
  limit=$(awk '$2 == "memory:" { print $4 }' "$work/cnn_trace.err")
  # cnn_train frees buffers whose swap-in pooch has not yet seen complete; such a swap has no
  # end in the trace, so here the trace may show fewer swaps than the summary counts.
  python3 "$check" "$work/cnn.json" --limit "$limit" --summary "$work/cnn_trace.err" \
    --min-swaps 1 --allow-unfinished >"$work/check_cnn.out" 2>&1 ||
    fail "cnn_train trace: $(cat "$work/check_cnn.out")"
  report="$report
  cnn_train: $(cat "$work/check_cnn.out")"
  ;;

*)
  fail "unknown case"
  ;;
esac
echo "ok:$report"
