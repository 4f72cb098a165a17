#!/bin/sh
# What a program sees of pooch's configuration and of CUDA's error and pointer semantics under it
# (issue 13, points 3 to 5), registered by errors.cmake (which says what each case checks).
#   errors_test.sh CASE LIBPOOCH SIMGPU_LIB_DIR ERRORS_PROBE FAULT_PROBE [POOCH]
# Every probe also runs on simgpu alone, the reference: what it checks is what the real API does.
# Exit 0 on success; otherwise prints what failed and exits 1.
set -u
case_name=$1
libpooch=$2
libdir=$3
errors_probe=$4
fault_probe=$5
pooch=${6:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/errors_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../../case_helpers.sh"
need_simgpu
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

# summary NAME FIELD: a number from run NAME's summary line "swaps:" ("out", "in", ...).
summary() {
  awk -v f="$2" '$2 == "swaps:" { for (i = 3; i < NF; ++i) if ($i == f) { print $(i + 1); exit } }' \
    "$work/$1.err"
}

# swapped NAME MIN: run NAME exited 0, swapped at least MIN allocations out and met no hazard.
swapped() {
  [ "$rc" -eq 0 ] || fail "$1: exit $rc"
  outs=$(summary "$1" out)
  [ "${outs:-0}" -ge "$2" ] || fail "$1: ${outs:-no} swap-outs, want >= $2 (is the limit kept?)"
  grep -i 'hazard' "$work/$1.err" && fail "$1: simgpu reported a hazard"
  report="$report
  $1: swaps out $outs in $(summary "$1" in)"
}

# errors NAME MODE [VAR=VALUE...]: the errors probe in MODE on simgpu alone (NAME_ref) and under
# pooch with the VAR=VALUE settings (NAME); both must pass every check.
errors() {
  probe_run=$1
  mode=$2
  shift 2
  run "${probe_run}_ref" "$errors_probe" "$mode"
  [ "$rc" -eq 0 ] || fail "${probe_run}_ref: the probe fails on simgpu alone (exit $rc)"
  run "$probe_run" env LD_PRELOAD="$libpooch" "$@" "$errors_probe" "$mode"
  [ "$rc" -eq 0 ] || fail "$probe_run: exit $rc"
  grep -q "^errors_probe $mode ok$" "$work/$probe_run.out" || fail "$probe_run: no ok line"
}

report=""
case $case_name in
min_swap)
  # Issue 13 point 3: POOCH_MIN_SWAP_BYTES 0 or 1 is a working configuration, not pooch off: the
  # limit holds (6 buffers of 4 MiB under 8 MiB: at least 4 swapped out), every allocation is
  # swappable (no slab), every byte reads back (fault_probe op checks them).
  for v in 0 1; do
    run "min_swap_$v" env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB \
      POOCH_MIN_SWAP_BYTES=$v "$fault_probe" op 6 4 ok
    swapped "min_swap_$v" 4
    grep -q '^pooch: small: slabs 0 ' "$work/min_swap_$v.err" || fail "min_swap_$v: slabs made"
    grep -i 'passing every call through' "$work/min_swap_$v.err" && fail "min_swap_$v: pooch off"
  done
  # The same through `pooch run --min-swap-bytes 0`, under the default (planner) policy.
  if [ -n "$pooch" ]; then
    run run_flag "$pooch" run --min-swap-bytes 0 --memory-limit 8MiB -- "$fault_probe" op 6 4 ok
    swapped run_flag 4
  fi
  # A small allocation is swappable too: the pointer queries still answer about it.
  errors min_swap_pointers pointers POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB \
    POOCH_MIN_SWAP_BYTES=0
  # When the parts cannot be made (here: the device is full before pooch's first call), that is
  # loud: one line, and allocations fail rather than run without the limit.
  SIMGPU_MEMORY=64MiB run full_ref "$errors_probe" full
  grep -q '^full cudaMalloc cudaErrorMemoryAllocation$' "$work/full_ref.out" ||
    fail "full_ref: the probe did not fill the device"
  SIMGPU_MEMORY=64MiB run full env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_SUMMARY=0 POOCH_LOG=warn \
    "$errors_probe" full
  grep -q '^full cudaMalloc cudaErrorInitializationError$' "$work/full.out" ||
    fail "full: cudaMalloc did not fail with cudaErrorInitializationError"
  [ "$(grep -c '^pooch: ' "$work/full.err")" -eq 1 ] || fail "full: want exactly one pooch line"
  grep -q '^pooch: cannot manage device memory under POOCH_POLICY=demand: the device has no free memory; every allocation fails' \
    "$work/full.err" || fail "full: the line does not say why and what follows"
  report="$report
  full: $(cat "$work/full.err")"
  ;;

clamp)
  # Issue 13 point 4: a limit above the device (1 GiB on a 32 MiB device) is lowered to what the
  # device has free, said once; 12 buffers of 4 MiB then swap instead of running out of memory.
  SIMGPU_MEMORY=32MiB
  export SIMGPU_MEMORY
  run clamp_ref "$fault_probe" op 12 4 ok
  [ "$rc" -ne 0 ] || fail "clamp_ref: the buffers fit the device alone; the case checks nothing"
  run clamp env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=1GiB \
    "$fault_probe" op 12 4 ok
  swapped clamp 1
  want="pooch: warning: POOCH_MEMORY_LIMIT 1073741824 bytes is more than the device has free (33554432 bytes); the limit is 33554432 bytes"
  [ "$(grep -c 'POOCH_MEMORY_LIMIT' "$work/clamp.err")" -eq 1 ] ||
    fail "clamp: want one line about the limit"
  grep -qxF "$want" "$work/clamp.err" || fail "clamp: the line is not: $want"
  grep -q '^pooch: memory: limit 33554432 ' "$work/clamp.err" || fail "clamp: summary limit"
  # A limit the device holds is kept, silently.
  run kept env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB \
    "$fault_probe" op 12 4 ok
  swapped kept 1
  grep -q 'POOCH_MEMORY_LIMIT' "$work/kept.err" && fail "kept: a line about the limit"
  grep -q '^pooch: memory: limit 8388608 ' "$work/kept.err" || fail "kept: summary limit"
  report="$report
  clamp: $want"
  ;;

codes)
  # Issue 13 point 5: out-of-memory codes and the runtime's last error, under demand swapping and
  # the default planner policy, with a limit the probe's 1 MiB allocation fits.
  errors codes_demand codes POOCH_POLICY=demand POOCH_MEMORY_LIMIT=16MiB
  errors codes_pooch codes POOCH_MEMORY_LIMIT=16MiB
  ;;

sticky)
  # Issue 13 point 5: after an illegal address every call returns it, pooch's own answers too
  # (a small block from a slab, a free, a swap-in that fails, a pointer query).
  errors sticky sticky POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB
  outs=$(summary sticky out)
  [ "${outs:-0}" -ge 1 ] || fail "sticky: nothing was swapped out before the fault"
  grep -q 'simgpu: illegal address' "$work/sticky.err" || fail "sticky: no illegal address"
  ;;

pointers)
  # Issue 13 point 5: pointer queries about the allocation the program asked for, while it is
  # swapped out (16 MiB of buffers pushed through an 8 MiB limit) and resident again.
  errors pointers pointers POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB
  swapped pointers 1
  errors pointers_pooch pointers POOCH_MEMORY_LIMIT=8MiB
  ;;

*)
  fail "unknown case"
  ;;
esac
echo "ok: $case_name$report"
