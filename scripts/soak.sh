#!/usr/bin/env bash
# Soak benchmark (not a test): random CUDA programs (interpose_soak: sizes, two streams per
# thread, threads, frees, memsets, device copies, reads of swapped-out data) under pooch for a
# while, under a tight limit, with every byte read back compared with a host shadow. Prints one
# line per run (ops, swaps, mismatches) and a total; exits 1 on any mismatch or error.
#
# Usage: scripts/soak.sh [BUILD] — environment: SOAK_MINUTES (default 5, the whole soak),
# SOAK_THREADS (default "1 2 4 8", one run each in turn until the time is spent), SOAK_LIMIT
# (default 16MiB), SOAK_SEED (default 1). Without a GPU it runs on simgpu with the hazard checker
# at error.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
minutes=${SOAK_MINUTES:-5}
threads_list=${SOAK_THREADS:-1 2 4 8}
limit=${SOAK_LIMIT:-16MiB}
seed=${SOAK_SEED:-1}
soak=$build/bin/interpose_soak
[ -x "$soak" ] && [ -e "$build/lib/libpooch.so" ] || { echo "soak: build $build first (scripts/setup.sh)" >&2; exit 2; }
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  export LD_LIBRARY_PATH=$build/lib/simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export SIMGPU_HAZARDS=error SIMGPU_MEMORY=${SIMGPU_MEMORY:-1GiB}
  device="simgpu (hazard checker at error)"
else
  device="$(nvidia-smi -L | head -n 1)"
fi
echo "soak: $minutes min on $device, POOCH_MEMORY_LIMIT=$limit, threads: $threads_list"
end=$(( $(date +%s) + minutes * 60 ))
count=$(echo $threads_list | wc -w)
per_run=$(( minutes * 60 / (2 * count) )); [ "$per_run" -ge 5 ] || per_run=5  # each list twice
log=$(mktemp)
trap 'rm -f "$log"' EXIT
runs=0 total_ops=0 total_reads=0 total_bytes=0 total_outs=0 total_ins=0 failed=0
while [ "$(date +%s)" -lt "$end" ]; do
  for threads in $threads_list; do
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 0 ] || break
    seconds=$(( left < per_run ? left : per_run ))
    rc=0
    LD_PRELOAD=$PWD/$build/lib/libpooch.so POOCH_POLICY=demand POOCH_MEMORY_LIMIT=$limit POOCH_LOG=info \
      "$soak" "$seconds" "$threads" "$seed" >"$log" 2>&1 || rc=$?
    line=$(grep '^soak: ops' "$log" || echo "soak: no result")
    read -r outs ins < <(awk '$2 == "swaps:" { print $4, $8 }' "$log")
    echo "run $runs: threads $threads seed $seed ${seconds}s: ${line#soak: }; swap_outs ${outs:-0} swap_ins ${ins:-0}; exit $rc"
    if [ "$rc" -ne 0 ]; then
      failed=$((failed + 1))
      grep -E 'mismatch|error|hazard|race' "$log" | head -n 5
    fi
    set -- $line
    total_ops=$((total_ops + ${3:-0})); total_reads=$((total_reads + ${5:-0}))
    total_bytes=$((total_bytes + ${7:-0}))
    total_outs=$((total_outs + ${outs:-0})); total_ins=$((total_ins + ${ins:-0}))
    runs=$((runs + 1)); seed=$((seed + 1))
  done
done
echo "soak: $runs runs, ops $total_ops, reads $total_reads, bytes_checked $total_bytes, swap_outs $total_outs, swap_ins $total_ins, failed runs $failed"
[ "$failed" -eq 0 ]
