#!/bin/sh
# Checks of libpooch.so, registered by CMakeLists.txt here (which says what each case checks).
#   interpose_test.sh CASE LIBPOOCH SIMGPU_LIB_DIR [ARG]
# Exit 0 on success; otherwise prints what failed and exits 1.
set -u
case_name=$1
libpooch=$2
libdir=$3
arg=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/interpose_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../../tests/case_helpers.sh"

# The POOCH_* variables of the caller must not change what a case checks.
for v in $(env | sed -n 's/^\(POOCH_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
# The checks read the summary's detailed lines, printed at POOCH_LOG=info (Note [Summary in
# words] in interpose/process/summary_words.h).
POOCH_LOG=info
export POOCH_LOG

# top_calls FILE HOOK: the program's own calls of HOOK from the summary (0 if not listed).
top_calls() {
  awk -v hook="$2" '$1 == "pooch:" && $2 == "calls:" && $3 == hook { n = $4 } END { print n + 0 }' "$1"
}

# torch_args: the torch cases' arguments (SIMGPU_RUN POOCH PYTHON SCRIPT, in $arg) into
# simgpu_run, pooch, python and script; fails without simgpu or the PyTorch venv.
torch_args() {
  need_simgpu
  # shellcheck disable=SC2086
  set -- $arg
  simgpu_run=$1 pooch=$2 python=$3 script=$4
  [ -x "$python" ] || fail "no PyTorch venv at $python (scripts/setup-torch.sh; POOCH_TORCH_VENV)"
}

# incore_reference ARGS...: cnn_train ($bin) in core with the hazard checker at error (which
# stays set for the runs after it); sets peak and sum, its peak_device_bytes and params_checksum.
incore_reference() {
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run incore "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "in-core run: exit $rc"
  peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$work/incore.out")
  sum=$(awk '$1 == "params_checksum" { print $2 }' "$work/incore.out")
  [ -n "$peak" ] && [ -n "$sum" ] || fail "in-core run: no peak or checksum"
}

# shared_reference FILE ARGS...: what incore_reference sets, from the in-core run of cnn_train
# ($bin) ARGS that the policies case wrote to FILE (its first line "args ARGS"); fails on a file
# of other arguments or older than $bin.
shared_reference() {
  file=$1
  shift
  [ -f "$file" ] || fail "no in-core reference $file (its ctest fixture, interpose_policies_reference_*)"
  [ "$(head -n 1 "$file")" = "args $*" ] || fail "$file is the in-core run of $(head -n 1 "$file"), not of $*"
  [ "$file" -nt "$bin" ] || fail "$file is older than $bin"
  tail -n +2 "$file" >"$work/incore.out"
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$work/incore.out")
  sum=$(awk '$1 == "params_checksum" { print $2 }' "$work/incore.out")
  [ -n "$peak" ] && [ -n "$sum" ] || fail "in-core reference $file: no peak or checksum"
}

# same_checksum NAME: run NAME's params_checksum is the in-core one, with no hazard reported.
same_checksum() {
  got=$(awk '$1 == "params_checksum" { print $2 }' "$work/$1.out")
  [ "$got" = "$sum" ] || fail "$1: params_checksum $got, $sum in-core"
  grep -i 'hazard' "$work/$1.err" && fail "$1: simgpu reported a hazard"
  return 0
}

# choices_of NAME: run NAME's iteration lines without their timings (losses and what a dynamic
# model chose), into NAME.choices.
choices_of() {
  sed -n 's/^\(iter [0-9]* loss [^ ]*\) ms [^ ]* img_per_s [^ ]*/\1/p' "$work/$1.out" >"$work/$1.choices"
}

# pooch_at_40_like_incore ARGS...: cnn_train ($bin) in core, then under `$pooch run --policy
# pooch` with NVTX iterations and a trace ($work/trace.json) on 40 % of the in-core peak; the
# parameters and every iteration's choices and loss must be in-core's.
pooch_at_40_like_incore() {
  incore_reference "$@"
  choices_of incore
  SIMGPU_MEMORY=$((peak * 40 / 100))
  POOCH_ITERATION_MARKER=nvtx
  POOCH_TRACE=$work/trace.json
  export SIMGPU_MEMORY POOCH_ITERATION_MARKER POOCH_TRACE
  run pooch "$pooch" run --policy pooch -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "pooch: exit $rc: $(tail -3 "$work/pooch.err")"
  same_checksum pooch
  choices_of pooch
  cmp -s "$work/incore.choices" "$work/pooch.choices" ||
    fail "pooch: iterations differ from in-core: $(diff "$work/incore.choices" "$work/pooch.choices" | head -4)"
}

# check_recompute NAME: if run NAME's plan recomputes maps, the recompute: line shows maps
# dropped and rebuilt by replay, and no replay failed; prints the line's counts.
check_recompute() {
  planned_rc=$(awk '$2 == "plan:" && $3 == "policy" && $9 == "recompute" { print $10 }' "$work/$1.err")
  [ "${planned_rc:-0}" -gt 0 ] || return 0
  line=$(grep '^pooch: recompute:' "$work/$1.err") || fail "$1: the plan recomputes but no recompute line"
  drops=$(echo "$line" | awk '{ print $10 }')
  replays=$(echo "$line" | awk '{ print $12 }')
  failures=$(echo "$line" | awk '{ print $20 }')
  [ "${drops:-0}" -gt 0 ] && [ "${replays:-0}" -gt 0 ] || fail "$1: nothing dropped or replayed: $line"
  [ "${failures:-1}" -eq 0 ] || fail "$1: replays failed: $line"
}

# check_dtr NAME MODEL PERCENT: run NAME under dtr has a dtr: line with no failed replay; at
# PERCENT <= 30 maps were dropped and rebuilt by replay (so that a dtr that silently swaps
# everything fails), except for resnet18, whose maps at batch 8 are all below
# POOCH_MIN_SWAP_BYTES and so never leave the device. Sets dtr_drops, dtr_replays, dtr_swapped.
check_dtr() {
  line=$(grep '^pooch: dtr:' "$work/$1.err") || fail "$1: no dtr line in the summary"
  dtr_drops=$(echo "$line" | awk '{ print $8 }')
  dtr_replays=$(echo "$line" | awk '{ print $10 }')
  dtr_swapped=$(echo "$line" | awk '{ print $18 }')
  failures=$(echo "$line" | awk '{ print $16 }')
  [ "${failures:-1}" -eq 0 ] || fail "$1: replays failed: $line"
  if [ "$3" -le 30 ] && [ "$2" != resnet18 ]; then
    [ "${dtr_drops:-0}" -gt 0 ] && [ "${dtr_replays:-0}" -gt 0 ] ||
      fail "$1: dtr dropped or rematerialised nothing at $3 %: $line"
  fi
}

# check_kernel_replays NAME: run NAME's recompute: line (when its plan recomputes) counts no
# more kernel replays than replays; kernel_replays_total sums them over the runs, and
# POOCH_LINEAGE_OUT's file (NAME.lineage) has the same count in its stats.
kernel_replays_total=0
check_kernel_replays() {
  line=$(grep '^pooch: recompute:' "$work/$1.err") || return 0
  kr=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "kernel_replays") print $(i + 1) }')
  replays=$(echo "$line" | awk '{ print $12 }')
  [ -n "$kr" ] && [ "$kr" -le "${replays:-0}" ] || fail "$1: kernel_replays $kr of $replays: $line"
  if [ -s "$work/$1.lineage" ]; then
    in_file=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["stats"]["kernel_replays"])' "$work/$1.lineage") ||
      fail "$1: the lineage file has no kernel_replays"
    [ "$in_file" = "$kr" ] || fail "$1: lineage file kernel_replays $in_file, summary $kr"
  fi
  kernel_replays_total=$((kernel_replays_total + kr))
}

case $case_name in
exports)
  names=$arg
  [ -s "$names" ] || fail "no list of hooks at $names"
  tr -s ' \t' '\n\n' <"$names" | grep . | sort >"$work/want.txt"
  nm -D --defined-only "$libpooch" | awk '{ print $NF }' | sort >"$work/have.txt"
  [ -s "$work/have.txt" ] || fail "nm found no exported symbols in $libpooch"
  if ! diff "$work/want.txt" "$work/have.txt" >"$work/diff.out"; then
    fail "exports differ from hooked_symbols.def (< missing, > unexpected)"
  fi
  # Every export is a function, and none carries a version (an unversioned definition is what
  # a program's versioned reference cudaMalloc@libcudart.so.13 binds to).
  objdump -T "$libpooch" | awk '$2 == "g" && $NF !~ /^_/ && $(NF-1) != "Base" && $3 == "DF" { print }' \
    >"$work/versioned.out"
  [ -s "$work/versioned.out" ] && fail "exports with a version node"
  # Self-contained: no NEEDED entry but the C and C++ runtime (no CUDA library, no Abseil), and
  # no symbol left to be bound to another library's definition (tests/case_helpers.sh).
  runtime_only "$libpooch"
  n=$(wc -l <"$work/want.txt")
  echo "ok: $n exported hooks; needs only $(tr '\n' ' ' <"$work/needed.txt")"
  ;;

startup_config)
  # A bad value stops the program before main: one line, exit 2, nothing from the program.
  run bad env LD_PRELOAD="$libpooch" POOCH_MEMORY_LIMIT=12QB sh -c 'echo main-ran'
  [ "$rc" -eq 2 ] || fail "bad POOCH_MEMORY_LIMIT: exit $rc, want 2"
  [ "$(wc -l <"$work/bad.err")" -eq 1 ] || fail "bad POOCH_MEMORY_LIMIT: want exactly one stderr line"
  grep -q "^pooch: POOCH_MEMORY_LIMIT='12QB': " "$work/bad.err" || fail "bad line: $(cat "$work/bad.err")"
  [ -s "$work/bad.out" ] && fail "the program ran despite the bad configuration"
  for bad in 0% 150% -5% abc% 40%%; do
    run badpercent env LD_PRELOAD="$libpooch" POOCH_MEMORY_LIMIT="$bad" sh -c 'echo main-ran'
    [ "$rc" -eq 2 ] || fail "POOCH_MEMORY_LIMIT=$bad: exit $rc, want 2"
    [ "$(wc -l <"$work/badpercent.err")" -eq 1 ] || fail "POOCH_MEMORY_LIMIT=$bad: want one stderr line"
    grep -q "^pooch: POOCH_MEMORY_LIMIT='$bad': " "$work/badpercent.err" ||
      fail "POOCH_MEMORY_LIMIT=$bad: $(cat "$work/badpercent.err")"
    [ -s "$work/badpercent.out" ] && fail "POOCH_MEMORY_LIMIT=$bad: the program ran"
  done
  run policy env LD_PRELOAD="$libpooch" POOCH_POLICY=sometimes true
  [ "$rc" -eq 2 ] || fail "bad POOCH_POLICY: exit $rc, want 2"
  grep -q "^pooch: POOCH_POLICY='sometimes'" "$work/policy.err" || fail "bad POOCH_POLICY line"
  # Good values: the program runs, and with POOCH_SUMMARY=0 pooch prints nothing.
  run good env LD_PRELOAD="$libpooch" POOCH_MEMORY_LIMIT=1GiB POOCH_POLICY=off POOCH_SUMMARY=0 POOCH_LOG=warn \
    sh -c 'echo main-ran'
  [ "$rc" -eq 0 ] || fail "good configuration: exit $rc"
  [ "$(cat "$work/good.out")" = main-ran ] || fail "good configuration: the program did not run"
  [ -s "$work/good.err" ] && fail "good configuration: unexpected stderr"
  # A misspelt variable is warned about, not fatal.
  run typo env LD_PRELOAD="$libpooch" POOCH_MEMORY_LIMT=1GiB POOCH_SUMMARY=0 true
  [ "$rc" -eq 0 ] || fail "misspelt variable: exit $rc"
  grep -q "POOCH_MEMORY_LIMT" "$work/typo.err" || fail "misspelt variable not reported"
  echo "ok"
  ;;

missing_real)
  run probe env -u LD_LIBRARY_PATH POOCH_SUMMARY=0 "$arg" "$libpooch"
  [ "$rc" -eq 0 ] || fail "probe exit $rc"
  # CUDA_ERROR_NOT_INITIALIZED = 3.
  [ "$(grep -c '^cuMemAlloc_v2 3$' "$work/probe.out")" -eq 2 ] || fail "cuMemAlloc_v2 codes"
  [ "$(grep -c '^cuMemFree_v2 3$' "$work/probe.out")" -eq 2 ] || fail "cuMemFree_v2 codes"
  [ "$(grep -c '^pooch: cannot find the real cuMemAlloc_v2 ' "$work/probe.err")" -eq 1 ] ||
    fail "want one line about cuMemAlloc_v2"
  [ "$(grep -c '^pooch: cannot find the real cuMemFree_v2 ' "$work/probe.err")" -eq 1 ] ||
    fail "want one line about cuMemFree_v2"
  echo "ok"
  ;;

driver_lookup)
  need_simgpu
  probe=$arg
  run plain "$probe" byname
  [ "$rc" -eq 0 ] || fail "probe without pooch: exit $rc"
  grep -q '^pooch:' "$work/plain.err" && fail "pooch output without the preload"
  for mode in byname proc proc_v2 entry entry_rt; do
    run "$mode" env LD_PRELOAD="$libpooch" POOCH_POLICY=off "$probe" "$mode"
    [ "$rc" -eq 0 ] || fail "$mode: exit $rc"
    grep -q '^probe ok$' "$work/$mode.out" || fail "$mode: probe did not finish"
    for hook in cuMemAlloc_v2 cuMemFree_v2 cuMemcpyHtoDAsync_v2; do
      n=$(top_calls "$work/$mode.err" "$hook")
      [ "$n" -eq 3 ] || fail "$mode: $hook intercepted $n times, want 3 (as by name)"
    done
  done
  # The version argument selects the form: 2000 is the 32-bit cuMemAlloc.
  run legacy env LD_PRELOAD="$libpooch" POOCH_POLICY=off "$probe" legacy
  [ "$rc" -eq 0 ] || fail "legacy: exit $rc"
  [ "$(top_calls "$work/legacy.err" cuMemAlloc)" -eq 1 ] || fail "legacy: cuMemAlloc not intercepted"
  [ "$(top_calls "$work/legacy.err" cuMemAlloc_v2)" -eq 0 ] || fail "legacy: got cuMemAlloc_v2"
  # Under a policy, cuMemGetInfo reports the limit and what the manager holds (4 MiB here).
  run meminfo env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=64MiB "$probe" meminfo
  [ "$rc" -eq 0 ] || fail "meminfo: exit $rc"
  [ "$(cat "$work/meminfo.out")" = "meminfo $((60 << 20)) $((64 << 20))" ] ||
    fail "meminfo under POOCH_MEMORY_LIMIT=64MiB: $(cat "$work/meminfo.out")"
  # A probe MODE that moves more data than an 8 MiB limit holds, through the calls HOOKS...:
  # every byte must come back, each hook must have been intercepted, and something must have
  # been swapped out (so the calls met swapped-out memory).
  check_swapping_probe() {
    mode=$1
    shift
    run "$mode" env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB "$probe" "$mode"
    [ "$rc" -eq 0 ] || fail "$mode: exit $rc: $(cat "$work/$mode.out" "$work/$mode.err" | head -3)"
    grep -q "^$mode ok\$" "$work/$mode.out" || fail "$mode: $(cat "$work/$mode.out")"
    for hook in "$@"; do
      [ "$(top_calls "$work/$mode.err" "$hook")" -gt 0 ] || fail "$mode: $hook not intercepted"
    done
    grep -q '^pooch: swaps: out [1-9]' "$work/$mode.err" ||
      fail "$mode: nothing was swapped out: $(grep 'swaps:' "$work/$mode.err")"
  }
  # The synchronous driver copies (24 one-MiB buffers), and the runtime's 2D copies and memsets
  # (16).
  check_swapping_probe synccopy cuMemcpyHtoD_v2 cuMemcpyDtoD_v2 cuMemcpy cuMemcpyDtoH_v2
  check_swapping_probe copy2d cudaMemcpy2D cudaMemcpy2DAsync cudaMemset2D cudaMemset2DAsync
  # POOCH_LOG=debug names each substitution.
  run debug env LD_PRELOAD="$libpooch" POOCH_POLICY=off POOCH_LOG=debug "$probe" proc_v2
  grep -q '^pooch: debug: cuGetProcAddress_v2(cuMemAlloc, 12000) -> pooch' "$work/debug.err" ||
    fail "no debug line for the substitution"
  echo "ok"
  ;;

passthrough)
  need_simgpu
  bin=$arg
  run plain "$bin" --model tiny --iters 5
  [ "$rc" -eq 0 ] || fail "cnn_train without pooch: exit $rc"
  run pooch env LD_PRELOAD="$libpooch" POOCH_POLICY=off "$bin" --model tiny --iters 5
  [ "$rc" -eq 0 ] || fail "cnn_train under pooch: exit $rc"
  cmp -s "$work/plain.out" "$work/pooch.out" || fail "output differs under POOCH_POLICY=off"
  grep -q '^params_checksum ' "$work/pooch.out" || fail "no params_checksum"
  # The preload was really in the path: the summary counts the program's calls.
  for hook in cudaMalloc cudnnConvolutionForward cublasSgemm_v2; do
    [ "$(top_calls "$work/pooch.err" "$hook")" -gt 0 ] || fail "$hook not intercepted"
  done
  echo "ok"
  ;;

threads)
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run plain "$arg" 4 3
  [ "$rc" -eq 0 ] || fail "without pooch: exit $rc"
  run pooch env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=24MiB "$arg" 4 3
  [ "$rc" -eq 0 ] || fail "under pooch: exit $rc"
  grep -q '^threads ok$' "$work/pooch.out" || fail "under pooch: no 'threads ok'"
  grep -i 'hazard' "$work/pooch.err" && fail "simgpu reported a hazard"
  outs=$(awk '$2 == "swaps:" { print $4 }' "$work/pooch.err")
  [ "${outs:-0}" -gt 0 ] || fail "no swapping happened"
  echo "ok: $outs swap-outs"
  ;;

threads_tight)
  # Issue 13, point 1: 2, 4 and 8 threads whose largest op (a device-to-device copy) needs
  # 8 MiB, under an 8 MiB limit, 20 runs each: no op may fail because of the other threads, and
  # every byte comes back (simgpu, hazard checker at error).
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  report=""
  for threads in 2 4 8; do
    for i in $(seq 1 20); do
      run tight env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB \
        "$arg" "$threads" 1 d2d
      [ "$rc" -eq 0 ] || fail "$threads threads, run $i: exit $rc: $(head -n 3 "$work/tight.err")"
      grep -q '^threads ok$' "$work/tight.out" || fail "$threads threads, run $i: no 'threads ok'"
      grep -i 'hazard' "$work/tight.err" && fail "$threads threads, run $i: simgpu reported a hazard"
    done
    report="$report $threads:$(awk '$2 == "swaps:" { print $4 }' "$work/tight.err")"
  done
  echo "ok: 20 runs each; swap-outs of the last run by threads:$report"
  ;;

host_full)
  # Issue 13, point 2: swapped-out data stays readable when the host pool is full. 6 buffers of
  # 4 MiB under an 8 MiB limit and a 16 MiB host limit: 4 are on the host, nothing more can be
  # swapped out, so none can come back; every copy out of them must still return every byte
  # (read from the pinned host copy: the summary's host_reads), with no hazard, no out-of-memory
  # error and nothing else on stderr but the summary.
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run probe env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB \
    POOCH_HOST_MEMORY_LIMIT=16MiB "$arg" host_full 6 4
  [ "$rc" -eq 0 ] || fail "probe: exit $rc: $(head -3 "$work/probe.out")"
  grep -q '^data_probe host_full ok ' "$work/probe.out" || fail "no result: $(cat "$work/probe.out")"
  grep -i 'hazard' "$work/probe.err" && fail "simgpu reported a hazard"
  line=$(grep '^pooch: swaps: ' "$work/probe.err") || fail "no swaps: line in the summary"
  field() { echo "$line" | awk -v f="$1" '{ for (i = 3; i < NF; ++i) if ($i == f) print $(i + 1) }'; }
  # The 13 copies out of buffers 0 and 1 (both on the host until the end) read their host copy.
  [ "$(field host_reads)" -ge 13 ] || fail "host_reads $(field host_reads), want >= 13: $line"
  [ "$(field oom)" -eq 0 ] || fail "an op ran out of memory: $line"
  not_summary "$work/probe.err" >"$work/other.txt"
  [ -s "$work/other.txt" ] && fail "unexpected stderr: $(head -3 "$work/other.txt")"
  echo "ok: $(cat "$work/probe.out"); host_reads $(field host_reads)"
  ;;

gemm_replay)
  # Note [GEMM replay] (interpose/hooks/cublas_gemm.h): gemm_replay_probe.cc's GEMMs under dtr at
  # a limit that holds about half of what it allocates, under the hazard checker. The probe
  # compares every output, byte for byte, with its copy taken right after the call; here: the
  # five beta = 0 GEMMs (and only they: the two with beta != 0 must get none) kept a recipe, and
  # cublasGemmEx, cublasSgemm_v2 and cublasGemmStridedBatchedEx outputs were rebuilt by replay
  # (the trace's recompute events name the call), with no replay failing.
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run plain "$arg"
  [ "$rc" -eq 0 ] && grep -q '^gemm_replay_probe ok$' "$work/plain.out" ||
    fail "without pooch: exit $rc: $(cat "$work/plain.out")"
  run dtr env LD_PRELOAD="$libpooch" POOCH_POLICY=dtr POOCH_MEMORY_LIMIT=10MiB \
    POOCH_MIN_SWAP_BYTES=256KiB POOCH_TRACE="$work/trace.json" "$arg"
  [ "$rc" -eq 0 ] && grep -q '^gemm_replay_probe ok$' "$work/dtr.out" ||
    fail "under dtr: exit $rc: $(cat "$work/dtr.out")"
  grep -i 'hazard\|illegal' "$work/dtr.err" && fail "under dtr: simgpu reported a hazard"
  line=$(grep '^pooch: dtr:' "$work/dtr.err") || fail "no dtr line in the summary"
  recipes=$(echo "$line" | awk '{ print $4 }')
  replays=$(echo "$line" | awk '{ print $10 }')
  failures=$(echo "$line" | awk '{ print $16 }')
  [ "$recipes" = 5 ] || fail "want 5 recipes (the beta = 0 GEMMs), got: $line"
  [ "$failures" = 0 ] || fail "replays failed: $line"
  python3 - "$work/trace.json" "$replays" <<'PY' || fail "trace: see above"
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
calls = collections.Counter(e["args"]["call"] for e in events if e.get("name") == "recompute")
assert sum(calls.values()) == int(sys.argv[2]), (calls, sys.argv[2])
for name in ("cublasGemmEx", "cublasSgemm_v2", "cublasGemmStridedBatchedEx"):
    assert calls[name] >= 1, f"no {name} output rebuilt by replay: {dict(calls)}"
print("replayed:", " ".join(f"{k} {v}" for k, v in sorted(calls.items())))
PY
  echo "ok: $line"
  ;;
opaque)
  # Note [Opaque calls]: a call pooch does not model, on buffers pooch swapped out
  # (opaque_probe.cc says how), under the hazard checker: first with room for everything (the
  # calls must see their memory resident and be counted), then without (the call must fail with
  # the API's out-of-memory status and one pooch: line naming it).
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run resident env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=12MiB \
    "$arg" resident
  [ "$rc" -eq 0 ] || fail "resident: exit $rc: $(head -3 "$work/resident.out") $(head -3 "$work/resident.err")"
  grep -q '^opaque_probe resident ok ' "$work/resident.out" || fail "resident: $(cat "$work/resident.out")"
  grep -i 'hazard\|illegal' "$work/resident.err" && fail "resident: simgpu reported a hazard"
  line=$(grep '^pooch: opaque: ' "$work/resident.err") || fail "resident: no opaque: line in the summary"
  echo "$line" | grep -q ' unclassified 0 cuMemAllocAsync 1 cuMemFreeAsync 1 cuMemcpyDtoD 1$' ||
    fail "resident: opaque: line does not count the three calls: $line"
  swaps=$(grep '^pooch: swaps: ' "$work/resident.err")
  ins=$(echo "$swaps" | awk '{ for (i = 3; i < NF; ++i) if ($i == "in") print $(i + 1) }')
  [ "${ins:-0}" -ge 1 ] || fail "resident: a was not swapped back in: $swaps"
  run refuse env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=12MiB \
    "$arg" refuse
  [ "$rc" -eq 0 ] || fail "refuse: exit $rc: $(head -3 "$work/refuse.out") $(head -3 "$work/refuse.err")"
  grep -q '^opaque_probe refuse ok ' "$work/refuse.out" || fail "refuse: $(cat "$work/refuse.out")"
  grep -q '^pooch: cuMemcpyDtoD: .*POOCH_MEMORY_LIMIT' "$work/refuse.err" ||
    fail "refuse: no pooch: line naming the call: $(grep -v 'calls:' "$work/refuse.err" | head -5)"
  grep -i 'hazard\|illegal' "$work/refuse.err" && fail "refuse: simgpu reported a hazard"
  echo "ok: $line"
  ;;

nccl)
  # Note [Collectives as accesses]: NCCL calls on buffers pooch swapped out, over the fake
  # one-rank libnccl.so.2 (nccl_probe.cc says how), under the hazard checker: every buffer must be
  # resident when its call is made (a group's at ncclGroupEnd), and read back the bytes the calls
  # left; every call is counted among the program's own.
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run probe env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=12MiB "$arg"
  [ "$rc" -eq 0 ] || fail "exit $rc: $(head -3 "$work/probe.out") $(grep -v '^pooch' "$work/probe.err" | head -3)"
  grep -q '^nccl_probe ok$' "$work/probe.out" || fail "$(cat "$work/probe.out")"
  grep -i 'hazard\|illegal' "$work/probe.err" && fail "simgpu reported a hazard"
  for hook in ncclAllReduce ncclSend ncclRecv ncclGroupStart ncclGroupEnd ncclAllGather \
    ncclBroadcast; do
    [ "$(top_calls "$work/probe.err" "$hook")" -eq 1 ] || fail "$hook: not one call of the program's"
  done
  swaps=$(grep '^pooch: swaps: ' "$work/probe.err")
  ins=$(echo "$swaps" | awk '{ for (i = 3; i < NF; ++i) if ($i == "in") print $(i + 1) }')
  [ "${ins:-0}" -ge 2 ] || fail "a was not swapped back in for the calls: $swaps"
  echo "ok: $swaps"
  ;;

bounds)
  # Issue 13, point 6: copies and memsets that run past an allocation or a small block, or start
  # in freed memory, fail with the invalid-value error before they write anything, with one
  # "pooch:" line each naming the call; exact ones and memory that is not pooch's still work.
  # Every byte of every buffer is checked, under the hazard checker.
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run probe env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=64MiB "$arg" bounds
  [ "$rc" -eq 0 ] || fail "probe: exit $rc: $(head -3 "$work/probe.out")"
  line=$(grep '^data_probe bounds ok ' "$work/probe.out") || fail "no result: $(cat "$work/probe.out")"
  rejected=$(echo "$line" | awk '{ print $5 }')
  [ "$rejected" -eq 19 ] || fail "$rejected calls rejected, want 19"
  grep -i 'hazard' "$work/probe.err" && fail "simgpu reported a hazard"
  not_summary "$work/probe.err" >"$work/other.txt"
  n=$(grep -c '^pooch: error: cu[A-Za-z0-9_]*: .*: returning the invalid-value error$' "$work/other.txt")
  [ "$n" -eq "$rejected" ] || fail "$n lines about rejected calls, want $rejected"
  [ "$(wc -l <"$work/other.txt")" -eq "$rejected" ] || fail "unexpected stderr: $(cat "$work/other.txt")"
  echo "ok: $line"
  ;;

graph_pool)
  # Note [Graphs], Note [Memory pools]: args PROBE.
  need_simgpu
  run graph_pool env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=64MiB "$arg"
  [ "$rc" -eq 0 ] || fail "graph_pool: exit $rc: $(cat "$work/graph_pool.err" | head -5)"
  grep -q '^graph_pool ok$' "$work/graph_pool.out" || fail "graph_pool: probe did not finish"
  [ "$(grep -c '^pooch: cudaStreamBeginCapture: CUDA graph capture is not supported under pooch' \
      "$work/graph_pool.err")" -eq 1 ] || fail "graph_pool: want one pooch: line for the capture"
  grep -q '^simgpu:' "$work/graph_pool.err" && fail "graph_pool: a pool call reached simgpu"
  echo "ok"
  ;;

kernel_verdict)
  # Note [Kernel words] (interpose/hooks/launch/kernel_args.h): swaps back in per run, read from
  # the summary's swaps: line. The probe's kernels are sm_90 SASS: POOCH_KERNEL_ARCH says so
  # whatever simgpu's preset.
  need_simgpu
  swaps_in() {
    awk '$1 == "pooch:" && $2 == "swaps:" { for (i = 3; i < NF; i++) if ($i == "in") print $(i + 1) }' "$work/$1.err"
  }
  verdict_run() {  # NAME MODE [VAR=VALUE...]
    name=$1 mode=$2
    shift 2
    run "$name" env LD_PRELOAD="$libpooch" SIMGPU_COMPUTE=timing POOCH_POLICY=demand \
      POOCH_MEMORY_LIMIT=40MiB POOCH_KERNEL_ARCH=sm_90 POOCH_KERNEL_CACHE="$work/cache" "$@" \
      "$arg" "$mode"
    [ "$rc" -eq 0 ] || fail "$name: exit $rc: $(grep -v '^pooch: ' "$work/$name.err" | head -5)"
    grep -q '^kernel_verdict ok$' "$work/$name.out" || fail "$name: no 'kernel_verdict ok'"
    grep -q '^pooch: opaque: calls 0 ' "$work/$name.err" || fail "$name: the launch was opaque"
  }
  verdict_run exact exact
  grep -q '^pooch: kernel analysis: _Z7k_scale9ScaleArgs (module .*) in [0-9.]* s$' "$work/exact.err" ||
    fail "exact: the kernel was not analysed: $(grep '^pooch: kernel' "$work/exact.err")"
  [ "$(swaps_in exact)" = 0 ] || fail "exact: the stale word's allocation came back: $(grep 'swaps:' "$work/exact.err")"
  ls "$work/cache/"*.json >/dev/null 2>&1 || fail "exact: no verdict file in POOCH_KERNEL_CACHE"
  # The second run reads the verdicts from the cache, and concludes the same.
  verdict_run cached exact
  grep -q '^pooch: kernel analysis: module .* kernels from the cache$' "$work/cached.err" ||
    fail "cached: the verdicts were not read from the cache: $(grep '^pooch: kernel' "$work/cached.err")"
  grep -q '^pooch: kernel analysis: .* in [0-9.]* s$' "$work/cached.err" &&
    fail "cached: analysed again: $(grep '^pooch: kernel' "$work/cached.err")"
  [ "$(swaps_in cached)" = 0 ] || fail "cached: the stale word's allocation came back"
  # Without the analysis the same kernel counts as touching all its words point into.
  verdict_run off exact POOCH_KERNEL_ANALYSIS=off
  [ "$(swaps_in off)" -ge 1 ] || fail "off: the stale word's allocation stayed out: $(grep 'swaps:' "$work/off.err")"
  grep -q '^pooch: kernel analysis' "$work/off.err" && fail "off: the analysis ran"
  # An unknown kernel behaves as before the analysis.
  verdict_run unknown unknown
  [ "$(swaps_in unknown)" -ge 1 ] || fail "unknown: its word's allocation stayed out: $(grep 'swaps:' "$work/unknown.err")"
  echo "ok"
  ;;

fresh_thread)
  # Note [Queries on a thread without a context] (interpose/hooks/kernel_args.cc): a launch from
  # a thread that has no current context yet is scanned like any other.
  need_simgpu
  SIMGPU_HAZARDS=error
  export SIMGPU_HAZARDS
  run pooch env LD_PRELOAD="$libpooch" SIMGPU_COMPUTE=timing POOCH_POLICY=demand \
    POOCH_MEMORY_LIMIT=64MiB "$arg"
  [ "$rc" -eq 0 ] || fail "exit $rc: $(head -5 "$work/pooch.err")"
  grep -q '^fresh_thread ok$' "$work/pooch.out" || fail "no 'fresh_thread ok'"
  grep -q '^pooch: opaque: calls 0 ' "$work/pooch.err" ||
    fail "the launch was opaque: $(grep '^pooch: .*opaque' "$work/pooch.err")"
  echo "ok"
  ;;

torch)
  # A small PyTorch MLP under `simgpu-run pooch run` at a limit below its peak: args
  # SIMGPU_RUN POOCH PYTHON SCRIPT.
  torch_args
  run torch env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING \
    SIMGPU_COMPUTE=timing SIMGPU_MEMORY=1GiB "$simgpu_run" "$pooch" run --memory-limit 120MiB \
    -- "$python" -W ignore "$script" 3
  [ "$rc" -eq 0 ] || fail "torch: exit $rc: $(grep -v '^pooch: calls' "$work/torch.err" | head -8)"
  grep -q '^done$' "$work/torch.out" || fail "torch: the loop did not finish"
  grep '^simgpu:' "$work/torch.err" && fail "torch: simgpu reported an error"
  grep -q '^allocator cudaMallocAsync$' "$work/torch.out" || fail "torch: allocator not cudaMallocAsync"
  grep -q '^pooch: swaps: out [1-9]' "$work/torch.err" ||
    fail "torch: nothing swapped out: $(grep 'swaps:' "$work/torch.err")"
  [ "$(top_calls "$work/torch.err" __cudaLaunchKernel)" -gt 0 ] || fail "torch: no __cudaLaunchKernel hooked"
  [ "$(top_calls "$work/torch.err" cudaMallocAsync)" -gt 0 ] || fail "torch: no cudaMallocAsync"
  # Note [Queries on a thread without a context] (interpose/hooks/kernel_args.cc): the
  # autograd thread's first launch is scanned like any other, not made opaque.
  grep -q '^pooch: opaque: calls 0 ' "$work/torch.err" ||
    fail "torch: opaque calls: $(grep '^pooch: \(opaque: \|.*kernel .*opaque call\)' "$work/torch.err")"
  # torch.cuda.max_memory_allocated() is pooch's peak (Note [Memory pools]).
  peak=$(awk '$2 == "memory:" { for (i = 3; i < NF; i++) if ($i == "peak_device_bytes") print $(i + 1) }' "$work/torch.err")
  [ "$(awk '$1 == "max_memory_allocated" { print $2 }' "$work/torch.out")" = "$peak" ] ||
    fail "torch: max_memory_allocated is not pooch's peak $peak"
  echo "ok"
  ;;

torch_auto)
  # The same MLP for 8 iterations under the default auto marker (Note [Carried lifetimes] in
  # core/profile/iteration_tracker.h): the Python loop holds the loss, the output and the
  # gradients across iterations, so the iteration is found only with carried lifetimes, then
  # profiled and planned at a limit that forces swaps. Args as torch.
  torch_args
  run torch_auto env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING \
    -u POOCH_ITERATION_MARKER SIMGPU_COMPUTE=timing SIMGPU_MEMORY=1GiB "$simgpu_run" "$pooch" run \
    --memory-limit 120MiB -- "$python" -W ignore "$script" 8
  err=$work/torch_auto.err
  [ "$rc" -eq 0 ] || fail "torch_auto: exit $rc: $(grep -v '^pooch: calls' "$err" | head -8)"
  grep -q '^done$' "$work/torch_auto.out" || fail "torch_auto: the loop did not finish"
  grep '^simgpu:' "$err" && fail "torch_auto: simgpu reported an error"
  grep -q '^pooch: iterations: marker auto profiles [1-9]' "$err" ||
    fail "torch_auto: no iteration found: $(grep 'iterations:' "$err")"
  grep -q '^pooch: plan: .*; carried out' "$err" ||
    fail "torch_auto: no plan carried out: $(grep 'plan:' "$err")"
  echo "ok"
  ;;

torch_lt)
  # Note [Scratch workspaces] (interpose/hooks/cublas_hooks.cc): the MLP with biased Linear
  # layers, whose forward runs through cublasLtMatmul with a workspace PyTorch allocates around
  # each call, profiled (POOCH_PROFILE_OUT) under the auto marker: every cublasLtMatmul of the
  # measured profile is replayable (its workspace is no read of memory nothing wrote). Args as
  # torch.
  torch_args
  run torch_lt env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING \
    -u POOCH_ITERATION_MARKER POOCH_PROFILE_OUT="$work/lt.json" SIMGPU_COMPUTE=timing \
    SIMGPU_MEMORY=1GiB "$simgpu_run" "$pooch" run --memory-limit 120MiB -- \
    "$python" -W ignore "$script" 8 linear-bias
  [ "$rc" -eq 0 ] || fail "torch_lt: exit $rc: $(grep -v '^pooch: calls' "$work/torch_lt.err" | head -8)"
  [ -s "$work/lt.json" ] || fail "torch_lt: no profile written: $(grep 'plan:' "$work/torch_lt.err")"
  counts=$("$python" -c 'import json, sys
ops = [o for o in json.load(open(sys.argv[1]))["ops"] if o["name"] == "cublasLtMatmul"]
print(len(ops), sum(o["replayable"] for o in ops))' "$work/lt.json")
  # shellcheck disable=SC2086
  set -- $counts
  [ "$1" -gt 0 ] || fail "torch_lt: no cublasLtMatmul in the profile"
  [ "$2" -eq "$1" ] || fail "torch_lt: only $2 of $1 cublasLtMatmul ops replayable"
  echo "ok ($1 cublasLtMatmul ops, all replayable)"
  ;;

run_command)
  pooch=$arg
  unset POOCH_LOG  # the checks of stderr below are at the default level
  # pooch run finds libpooch.so at ../lib/libpooch.so from its own directory.
  [ "$(cd "$(dirname "$pooch")/../lib" 2>/dev/null && pwd)/libpooch.so" = \
    "$(cd "$(dirname "$libpooch")" && pwd)/libpooch.so" ] || fail "pooch and libpooch.so not in bin/ and lib/"
  run usage "$pooch" run
  [ "$rc" -eq 2 ] || fail "missing command: exit $rc, want 2"
  grep -q '^usage: pooch run' "$work/usage.err" || fail "missing command: no usage"
  run usage2 "$pooch" run --policy off --
  [ "$rc" -eq 2 ] || fail "missing command after --: exit $rc, want 2"
  for bad in "--memory-limit 12QB" "--policy sometimes" "--log loud" "--min-swap-bytes -1" \
             "--bogus 1" "--policy" "--memory-limit 0%" "--memory-limit 150%" \
             "--memory-limit -5%" "--memory-limit abc%" "--memory-limit 40%%"; do
    # shellcheck disable=SC2086
    run bad "$pooch" run $bad -- sh -c 'echo ran'
    [ "$rc" -eq 2 ] || fail "'$bad': exit $rc, want 2"
    [ "$(wc -l <"$work/bad.err")" -eq 1 ] || fail "'$bad': want one stderr line"
    grep -q '^pooch: ' "$work/bad.err" || fail "'$bad': line not prefixed pooch:"
    [ -s "$work/bad.out" ] && fail "'$bad': the command ran"
  done
  grep -q "^pooch: run: --memory-limit '40%%': expected a number before '%'$" "$work/bad.err" ||
    fail "bad percentage: $(cat "$work/bad.err")"
  # A percentage of the device: passed on as written, for the library to read the device.
  run percent "$pooch" run --memory-limit 12.5% --no-summary -- sh -c 'echo "$POOCH_MEMORY_LIMIT"'
  [ "$rc" -eq 0 ] && [ "$(cat "$work/percent.out")" = 12.5% ] ||
    fail "--memory-limit 12.5%: exit $rc, got '$(cat "$work/percent.out")'"
  run missing "$pooch" run -- /nonexistent/command
  [ "$rc" -eq 127 ] || fail "unrunnable command: exit $rc, want 127"
  [ "$(wc -l <"$work/missing.err")" -eq 1 ] || fail "unrunnable command: want one line"
  # The variables, the preload (first, existing entries kept) and the command's exit status.
  run env env LD_PRELOAD=/lib/other.so "$pooch" run --policy off --memory-limit 1GiB \
    --min-swap-bytes 4MiB --log warn --trace "$work/t.json" --no-summary -- \
    sh -c 'echo "$LD_PRELOAD|$POOCH_POLICY|$POOCH_MEMORY_LIMIT|$POOCH_MIN_SWAP_BYTES|$POOCH_LOG|$POOCH_TRACE|$POOCH_SUMMARY|$PYTORCH_NO_CUDA_MEMORY_CACHING|$PYTORCH_CUDA_ALLOC_CONF"; exit 5'
  [ "$rc" -eq 5 ] || fail "command's exit status not passed on: $rc"
  # Policy off: PyTorch's allocator is left alone (Note [PyTorch's allocator], cli/torch_allocator.h).
  want="$(cd "$(dirname "$libpooch")" && pwd)/libpooch.so:/lib/other.so|off|1GiB|4MiB|warn|$work/t.json|0||"
  [ "$(cat "$work/env.out")" = "$want" ] || fail "environment: got '$(cat "$work/env.out")', want '$want'"
  # Otherwise the cudaMallocAsync backend, unless the user chose: theirs wins, with one line when
  # it keeps the caching allocator.
  alloc='echo "$PYTORCH_NO_CUDA_MEMORY_CACHING|$PYTORCH_CUDA_ALLOC_CONF"'
  run alloc env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING \
    "$pooch" run --no-summary -- sh -c "$alloc"
  [ "$(cat "$work/alloc.out")" = "|backend:cudaMallocAsync" ] || fail "allocator: got '$(cat "$work/alloc.out")'"
  [ -s "$work/alloc.err" ] && fail "allocator: unexpected stderr: $(cat "$work/alloc.err")"
  run alloc_user env -u PYTORCH_CUDA_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
    "$pooch" run --no-summary -- sh -c "$alloc"
  [ "$(cat "$work/alloc_user.out")" = "1|" ] || fail "user's allocator: got '$(cat "$work/alloc_user.out")'"
  [ -s "$work/alloc_user.err" ] && fail "user's per-tensor allocator: unexpected stderr"
  run alloc_caching env -u PYTORCH_NO_CUDA_MEMORY_CACHING \
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$pooch" run --no-summary -- sh -c "$alloc"
  [ "$(cat "$work/alloc_caching.out")" = "|expandable_segments:True" ] || fail "user's caching allocator changed"
  [ "$(grep -c '^pooch: run: PyTorch.s caching allocator stays on' "$work/alloc_caching.err")" -eq 1 ] ||
    fail "user's caching allocator: want one pooch: line, got: $(cat "$work/alloc_caching.err")"
  # Without "--": the first argument that is not a flag (or a flag's value) is the command.
  run nodash "$pooch" run --policy off --no-summary sh -c 'echo "$POOCH_POLICY"'
  [ "$rc" -eq 0 ] && [ "$(cat "$work/nodash.out")" = off ] || fail "command without --"
  # With simgpu: the preload is really in the program.
  if [ -e "$libdir/libcudart.so.13" ]; then
    need_simgpu
    run summary "$pooch" run --policy off --log info -- true
    grep -q '^pooch: loaded, policy off' "$work/summary.err" || fail "libpooch.so not loaded"
  fi
  echo "ok"
  ;;

demand)
  # Demand swapping on simgpu (issue 4, point 1): args POOCH CNN_TRAIN MODEL PERCENT.
  #   tiny      --batch 64 (so that every feature map is >= 1 MiB, POOCH_MIN_SWAP_BYTES'
  #             default, and can be swapped), 20 iterations
  #   resnet18  --batch 8 --image 64 --classes 10, 3 iterations: its peak is mostly the
  #             parameters, gradients and momentum, one tensor each, and the feature maps are
  #             below 1 MiB, so this is the optimizer's and the small tensors' case
  # The in-core run gives the peak and the checksum; with the device (SIMGPU_MEMORY) at
  # PERCENT % of that peak, cnn_train alone must exit 3 (OOM), and under `pooch run --policy
  # demand` at pooch's default limit (what the device reports free) must train every iteration
  # to the same params_checksum, bit for bit, with the hazard checker at error.
  need_simgpu
  pooch=$arg
  bin=$5
  model=${6:-tiny}
  percent=${7:-40}
  case $model in
    tiny) iters=20; set -- --model tiny --batch 64 --iters $iters ;;
    resnet18) iters=3; set -- --model resnet18 --batch 8 --image 64 --classes 10 --iters $iters ;;
    *) fail "unknown model $model" ;;
  esac
  incore_reference "$@"
  SIMGPU_MEMORY=$((peak * percent / 100))
  export SIMGPU_MEMORY
  run alone "$bin" "$@"
  [ "$rc" -eq 3 ] || fail "without pooch at $percent % ($SIMGPU_MEMORY bytes): exit $rc, want 3 (OOM)"
  run pooch "$pooch" run --policy demand --trace "$work/trace.json" -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "under pooch at $percent % ($SIMGPU_MEMORY bytes): exit $rc"
  n=$(grep -c '^iter ' "$work/pooch.out")
  [ "$n" -eq $iters ] || fail "under pooch: $n iterations, want $iters"
  same_checksum pooch
  outs=$(awk '$2 == "swaps:" { print $4 }' "$work/pooch.err")
  ins=$(awk '$2 == "swaps:" { print $8 }' "$work/pooch.err")
  [ "${outs:-0}" -gt 0 ] && [ "${ins:-0}" -gt 0 ] || fail "no swapping happened (out ${outs:-?}, in ${ins:-?})"
  limit=$(awk '$2 == "memory:" { print $4 }' "$work/pooch.err")
  used=$(awk '$2 == "memory:" { print $6 }' "$work/pooch.err")
  [ "$used" -le "$limit" ] || fail "peak $used above the limit $limit"
  [ "$limit" -le "$SIMGPU_MEMORY" ] || fail "limit $limit above the device's $SIMGPU_MEMORY bytes"
  # The host: line (Note [Host time] in core/device/timed_device.h): the ops pooch made resident
  # and the device calls it made; every swap queued exactly one copy but a swap-out whose host
  # copy was current (Note [Current host copies]), and memory was mapped.
  summary_field() { awk -v l="$1:" -v k="$2" '$2 == l { for (i = 3; i < NF; i++) if ($i == k) print $(i + 1) }' "$work/pooch.err"; }
  current=$(summary_field swaps current_outs)
  host_ops=$(summary_field host op)
  host_copies=$(summary_field host copy)
  host_map=$(summary_field host map)
  [ "${host_ops:-0}" -gt 0 ] || fail "host: line: op ${host_ops:-missing}"
  [ -n "$current" ] || fail "swaps: line: no current_outs"
  [ "${host_copies:--1}" -eq $((outs - current + ins)) ] ||
    fail "host: line: copy ${host_copies:-missing}, want the $((outs - current + ins)) swaps that copied"
  [ "${host_map:-0}" -gt 0 ] || fail "host: line: map ${host_map:-missing}"
  # POOCH_TRACE: a terminated document with the swaps in it.
  tail -c 200 "$work/trace.json" | grep -q '"displayTimeUnit"' || fail "trace not terminated"
  grep -q '"name":"swap out"' "$work/trace.json" || fail "no swap-out in the trace"
  echo "ok: $model at $percent % of $peak bytes (device $SIMGPU_MEMORY, limit $limit, peak $used)," \
    "checksum $sum, $outs swap-outs, $ins swap-ins"
  ;;

profile)
  # Profiling and planning under a planner policy (issue 5): args POOCH CNN_TRAIN [VARY].
  # cnn_train tiny at batch 64 on a device at 50 % of its in-core peak, under
  # `pooch run --policy pooch` with POOCH_PROFILE_OUT: the iteration is found, profiled and
  # planned (the summary's iterations and plan lines, the trace's runtime track), the profile
  # file is one that `pooch plan --profile` plans from, the plan's swaps are carried out
  # (planned swap-outs and prefetches in the summary), its recomputations too (maps dropped and
  # rebuilt by replay, none failed), and the parameters are the in-core run's, bit for bit.
  # (At 40 % the half batch of --vary-batch does not fit even under demand swapping: its maps
  # are below POOCH_MIN_SWAP_BYTES, so unswappable.)
  # With VARY=vary the batch halves every third iteration (--vary-batch): those iterations
  # depart from the profile, are counted, and the result is still the in-core twin's.
  # With VARY=nvtx iterations come from the program's NVTX ranges (below). Without VARY, the
  # profile is the swap-all iteration (every feature map's swap-out measured), and a run with
  # POOCH_PROFILE_SWAP=demand profiles under demand swapping, bit for bit too.
  need_simgpu
  pooch=$arg
  bin=$5
  vary=${6:-}
  set -- --model tiny --batch 64 --iters 12
  [ "$vary" = vary ] && set -- "$@" --vary-batch
  # With VARY=nvtx cnn_train marks each iteration with an NVTX range "pooch:iteration" and pooch
  # reads those (POOCH_ITERATION_MARKER=nvtx); first, with another NVTX tool named, pooch says
  # it cannot read them, makes no profile, and the result is still the in-core one.
  [ "$vary" = nvtx ] && set -- "$@" --nvtx
  incore_reference "$@"
  if [ "$vary" = nvtx ]; then
    SIMGPU_MEMORY=$((peak * 50 / 100))
    export SIMGPU_MEMORY
    run othertool env POOCH_ITERATION_MARKER=nvtx NVTX_INJECTION64_PATH=/nonexistent/libtool.so \
      "$pooch" run --policy pooch -- "$bin" "$@"
    [ "$rc" -eq 0 ] || fail "with another NVTX tool: exit $rc"
    same_checksum othertool
    grep -q 'NVTX_INJECTION64_PATH names another tool' "$work/othertool.err" ||
      fail "with another NVTX tool: no line saying so"
    grep -q '^pooch: iterations: marker nvtx profiles 0 ' "$work/othertool.err" ||
      fail "with another NVTX tool: $(grep 'iterations:' "$work/othertool.err")"
    POOCH_ITERATION_MARKER=nvtx
    export POOCH_ITERATION_MARKER
  fi
  SIMGPU_MEMORY=$((peak * 50 / 100))
  export SIMGPU_MEMORY
  POOCH_PROFILE_OUT=$work/profile.json
  export POOCH_PROFILE_OUT
  run pooch "$pooch" run --policy pooch --trace "$work/trace.json" -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "under pooch: exit $rc"
  same_checksum pooch
  # The trace shows the plan and the followed iterations on the runtime's track.
  grep -q '"name":"plan"' "$work/trace.json" || fail "no plan in the trace"
  grep -q '"name":"iteration"' "$work/trace.json" || fail "no iteration in the trace"
  profiles=$(awk '$2 == "iterations:" { print $6 }' "$work/pooch.err")
  departures=$(awk '$2 == "iterations:" { print $10 }' "$work/pooch.err")
  [ "${profiles:-0}" -ge 1 ] || fail "no profile was made: $(grep 'iterations:' "$work/pooch.err")"
  grep -q '^pooch: plan: policy pooch keep [0-9]* swap [0-9]* recompute [0-9]* predicted_iteration_ms [0-9.]* feasible yes' \
    "$work/pooch.err" || fail "no feasible plan in the summary"
  if [ "$vary" = vary ]; then
    [ "${departures:-0}" -ge 1 ] || fail "a varying batch never departed from the profile"
  fi
  if [ "$vary" = nvtx ]; then
    grep -q '^pooch: iterations: marker nvtx ' "$work/pooch.err" ||
      fail "the NVTX marker was not used: $(grep 'iterations:' "$work/pooch.err")"
  fi
  # The plan's swaps were carried out: planned swap-outs and prefetches happened.
  swapped=$(awk '$2 == "plan_run:" { print $4 }' "$work/pooch.err")
  planned=$(awk '$2 == "plan_run:" { print $6 }' "$work/pooch.err")
  prefetched=$(awk '$2 == "plan_run:" { print $8 }' "$work/pooch.err")
  [ "${swapped:-0}" -gt 0 ] || fail "the plan swaps no map: $(grep 'plan' "$work/pooch.err")"
  [ "${planned:-0}" -gt 0 ] && [ "${prefetched:-0}" -gt 0 ] ||
    fail "the plan was not carried out: $(grep 'plan_run:' "$work/pooch.err")"
  check_recompute pooch
  [ -s "$work/profile.json" ] || fail "POOCH_PROFILE_OUT was not written"
  # Maps swapped while profiled carry their measured copy times (Note [Copy times]).
  timed=$(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
print(sum(1 for t in p["tensors"] if t.get("swap_out_us", -1) > 0 and t.get("swap_in_us", -1) > 0))' \
    "$work/profile.json") || fail "cannot read the profile"
  [ "${timed:-0}" -gt 0 ] || fail "no tensor of the profile has measured copy times"
  # Note [Program copies] (core/sim/sim.cc): the input's upload and the output's read-back are
  # ops that say what they copy, one way each.
  copies=$(python3 -c 'import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
up = sum(1 for o in ops if o.get("to_device_bytes", 0) > 0)
down = sum(1 for o in ops if o.get("to_host_bytes", 0) > 0)
both = sum(1 for o in ops if o.get("to_device_bytes", 0) > 0 and o.get("to_host_bytes", 0) > 0)
print("ok" if up > 0 and down > 0 and both == 0 else
      "%d to the device, %d to the host, %d both ways" % (up, down, both))' \
    "$work/profile.json") || fail "cannot read the profile"
  [ "$copies" = ok ] || fail "the profile's copies: $copies"
  if [ -z "$vary" ]; then
    # Note [Swap-all profiling]: the profile is an iteration with every interval swapped, so
    # each swapped tensor's swap-out was measured; with POOCH_PROFILE_SWAP=demand it is a
    # demand-swapped one. The tensors swap-all swaps at this limit are those of its plan.
    grep -q '^pooch: iterations: .* profiled_under swap-all ' "$work/pooch.err" ||
      fail "not profiled under swap-all: $(grep 'iterations:' "$work/pooch.err")"
    limit=$(awk '$2 == "memory:" { print $4 }' "$work/pooch.err")
    run swapall "$pooch" plan --profile "$work/profile.json" --memory "$limit" \
      --policy swap-all --json "$work/swapall.json"
    [ "$rc" -eq 0 ] || fail "pooch plan --policy swap-all on the written profile: exit $rc"
    untimed=$(python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
plan = json.load(open(sys.argv[2]))
swapped = {d["tensor"] for d in plan["decisions"] if d["decision"] == "swap"}
assert swapped, "swap-all swaps nothing"
print(sum(1 for t in p["tensors"] if t["id"] in swapped and t.get("swap_out_us", -1) <= 0))' \
      "$work/profile.json" "$work/swapall.json") || fail "cannot read the profile or the plan"
    [ "$untimed" = 0 ] || fail "$untimed tensors swapped in the swap-all profile have no swap-out time"
  fi
  unset POOCH_PROFILE_OUT
  limit=$(awk '$2 == "memory:" { print $4 }' "$work/pooch.err")
  run replan "$pooch" plan --profile "$work/profile.json" --memory "$limit" --policy pooch
  [ "$rc" -eq 0 ] || fail "pooch plan --profile on the written profile: exit $rc"
  if [ -z "$vary" ]; then
    run demandprofile env POOCH_PROFILE_SWAP=demand "$pooch" run --policy pooch -- "$bin" "$@"
    [ "$rc" -eq 0 ] || fail "POOCH_PROFILE_SWAP=demand: exit $rc"
    same_checksum demandprofile
    grep -q '^pooch: iterations: .* profiled_under demand ' "$work/demandprofile.err" ||
      fail "POOCH_PROFILE_SWAP=demand: $(grep 'iterations:' "$work/demandprofile.err")"
  fi
  echo "ok: profiled ($profiles), departures ${departures:-0}, checksum $sum;" \
    "$(grep '^pooch: plan:' "$work/pooch.err" | cut -c1-90)"
  ;;

policies)
  # Every policy gives the in-core parameters (issue 5, point 1): args POOCH CNN_TRAIN MODEL
  # PERCENT [REFERENCE]. The device is at PERCENT % of the in-core peak; each policy runs under
  # `pooch run --policy P` (the first iterations profiled, the plan carried out after) with the
  # hazard checker at error, and must end with the in-core params_checksum, bit for bit. A
  # policy whose plan does not fit runs under demand swapping and must match all the same.
  # PERCENT is of the in-core run's peak_device_bytes, the peak over all its iterations (the
  # dynamic models' iterations differ in what they hold).
  # dtr (issue 16's baseline) plans nothing: its dtr: line must show no failed replay and, at
  # 30 % and below, maps dropped and rebuilt by replay (check_dtr).
  # The in-core run depends on the model alone, so a model's cases share one (their ctest
  # fixture): PERCENT "reference" makes that run and writes it to REFERENCE, a case given
  # REFERENCE reads it (shared_reference); without REFERENCE a case makes its own.
  need_simgpu
  pooch=$arg
  bin=$5
  model=${6:-tiny}
  percent=${7:-50}
  reference=${8:-}
  dynamic=""
  own_kernels=""
  case $model in
    # 5 iterations (tiny-hostloss and tiny-habits too): the iteration found in the first two,
    # the third profiled (Note [Swap-all profiling]), two under the plan, so that the plan is
    # entered both from the profile and from a planned iteration. (resnet18, unet and densenet,
    # two to four times dearer per iteration, run one under the plan.)
    tiny) set -- --model tiny --batch 64 --iters 5 ;;
    # 4 iterations: two to find the iteration, one with every feature map swapped (the profile,
    # Note [Swap-all profiling]), one under the plan (CI time: 4 s per iteration).
    resnet18) set -- --model resnet18 --batch 8 --image 64 --classes 10 --iters 4 ;;
    # Issue 12's access patterns, 4 iterations as resnet18: transposed convolutions and skips
    # added in place (unet), concatenation buffers written by many copies (densenet). Batch 16
    # puts most maps at or above POOCH_MIN_SWAP_BYTES (unet: 4, 2, 1 MiB by level; only the
    # bottleneck's 0.5 MiB are small), so that 30 % leaves room beside the resident ones.
    unet) set -- --model unet --batch 16 --image 64 --iters 4 ;;
    densenet) set -- --model densenet --batch 16 --image 32 --iters 4 ;;
    # The loss read back to the host between forward and backward in every iteration.
    tiny-hostloss) set -- --model tiny --batch 64 --iters 5 --host-loss ;;
    # Issue 37's habits of trainers written outside this project: every convolution's output
    # then added to in place by its bias (cudnnAddTensor), residual shortcuts added in place into
    # the main path's map (cudnnOpTensor), and the loss read back mid-iteration (tiny-habits);
    # unet's in-place skips with the bias additions (unet-bias), and with a gated block ending
    # each decoder level (unet-gated: tanh, sigmoid and their product).
    tiny-habits) set -- --model tiny --batch 64 --iters 5 --conv-bias --inplace-skips --host-loss ;;
    unet-bias) set -- --model unet --batch 16 --image 64 --iters 4 --conv-bias ;;
    unet-gated) set -- --model unet --batch 16 --image 64 --iters 4 --conv-bias --gated-blocks ;;
    # Issue 36's kernel replays: tiny's ReLUs and residual additions are cnn_train's own kernels
    # (--own-kernels), run by simgpu as their CPU twins (Note [CPU twins]). nvcc builds them for
    # sm_80, sm_90 and sm_100, so the device is an h100-pcie5 (sm_90), whose SASS the analysis
    # reads (Note [Verdicts at launch]); the plans that recompute must replay some of them
    # (check_kernel_replays).
    tiny-own)
      set -- --model tiny --batch 64 --iters 8 --own-kernels
      SIMGPU_PRESET=h100-pcie5
      export SIMGPU_PRESET
      own_kernels=1
      ;;
    # The same with every convolution's bias added in place by cnn_train's kernel: each map is
    # rebuilt by the chain of its convolution and that launch (Note [Kernel links]).
    tiny-own-bias)
      set -- --model tiny --batch 64 --iters 8 --own-kernels --conv-bias
      SIMGPU_PRESET=h100-pcie5
      export SIMGPU_PRESET
      own_kernels=1
      ;;
    # Issue 16's dynamic workloads: what runs changes from iteration to iteration, decided from
    # values computed on the device and read back mid-forward (docs/simgpu.md, cnn_train).
    # They mark their iterations with NVTX ranges that pooch reads (POOCH_ITERATION_MARKER=nvtx),
    # so that every policy profiles and plans an iteration and then meets iterations that depart
    # from it. (Under the automatic detector skipnet's period is found in two back-to-back gate
    # computations and pooch stays under demand swapping.) skipnet departs on a gate pattern the
    # profile did not have; moe's iterations all look alike to pooch (its experts are of one
    # size), so a plan made on one choice of experts is carried out on others; tiny-vary's on a
    # change of image side. Batch 64 puts skipnet's and tiny's maps at 1 MiB or more, swappable;
    # tiny-vary's sides 32 and 44 keep its maps close to whole 2 MiB chunks (at 30 % of the
    # 44-pixel peak a 40-pixel side's chunks leave no room for its largest op). moe's expert
    # weights are 1 MiB each and its model state is most of its peak: at 30 % the expert
    # weights alone exceed the device (checked below). It runs 8 of its 16 experts per
    # iteration, so that an iteration (the chosen experts' weights, gradients and momentum,
    # 51 MB, and the stem's maps) does not fit at 50 % either and the plans must move weights
    # (with 2 of 16 the profiled iteration fits and the plans are empty: the unchosen experts
    # are outside the profile and come back by demand swapping when chosen).
    skipnet)
      set -- --model skipnet --batch 64 --iters 5 --nvtx
      dynamic=gates
      ;;
    moe)
      set -- --model moe --batch 16 --top-k 8 --iters 6 --nvtx
      dynamic=experts
      ;;
    tiny-vary)
      set -- --model tiny --batch 64 --vary-image 32,44 --iters 5 --nvtx
      dynamic=image
      ;;
    *) fail "unknown model $model" ;;
  esac
  if [ "$percent" = reference ]; then
    incore_reference "$@"
    { echo "args $*" && cat "$work/incore.out"; } >"$reference.tmp" && mv "$reference.tmp" "$reference" ||
      fail "cannot write $reference"
    echo "ok: in-core reference of $model, checksum $sum, peak $peak"
    exit 0
  fi
  if [ -n "$reference" ]; then shared_reference "$reference" "$@"; else incore_reference "$@"; fi
  if [ -n "$dynamic" ]; then
    # The choices must change across iterations, or nothing dynamic was tested.
    patterns=$(awk -v key="$dynamic" '$1 == "iter" { for (i = 2; i < NF; i++) if ($i == key) print $(i + 1) }' \
      "$work/incore.out" | sort -u | wc -l)
    [ "$patterns" -ge 2 ] || fail "in-core: the $dynamic never changed across iterations"
    # Each policy's run must make the in-core run's choices with the in-core losses: the
    # iteration lines without their timings.
    choices_of incore
    POOCH_ITERATION_MARKER=nvtx
    export POOCH_ITERATION_MARKER
  fi
  SIMGPU_MEMORY=$((peak * percent / 100))
  export SIMGPU_MEMORY
  if [ "$dynamic" = experts ] && [ "$percent" -le 30 ]; then
    # 16 experts of fc1 (64 x 4096 + 4096) and fc2 (4096 x 64 + 64) floats.
    experts_bytes=$((16 * (64 * 4096 + 4096 + 4096 * 64 + 64) * 4))
    [ "$SIMGPU_MEMORY" -lt "$experts_bytes" ] ||
      fail "the device ($SIMGPU_MEMORY bytes) holds all the expert weights ($experts_bytes bytes)"
  fi
  report=""
  for policy in in-core swap-all-nosched swap-all swap-opt pooch superneurons checkpoint optimal dtr; do
    if [ -n "$own_kernels" ]; then
      POOCH_LINEAGE_OUT=$work/$policy.lineage
      export POOCH_LINEAGE_OUT
    fi
    run "$policy" "$pooch" run --policy "$policy" -- "$bin" "$@"
    [ "$rc" -eq 0 ] || fail "$policy: exit $rc"
    same_checksum "$policy"
    if [ "$policy" = dtr ]; then
      check_dtr dtr "$model" "$percent"
      report="$report dtr:drops/replays/swaps:$dtr_drops/$dtr_replays/$dtr_swapped"
    else
      grep -q '^pooch: plan: ' "$work/$policy.err" || fail "$policy: no plan line"
      check_recompute "$policy"
      [ -z "$own_kernels" ] || check_kernel_replays "$policy"
      report="$report $policy:$(awk '$2 == "plan:" { print ($5 == "failed:" ? "no-plan" : $6 "/" $8 "/" $10) }' "$work/$policy.err")"
    fi
    if [ -n "${experts_bytes:-}" ]; then
      # The expert weights do not fit: every policy moved some of them to the host and back.
      ins=$(awk '$2 == "swaps:" { print $8 }' "$work/$policy.err")
      [ "${ins:-0}" -gt 0 ] || fail "$policy: nothing was swapped in"
    fi
    if [ -n "$dynamic" ]; then
      # pooch's own plan is made and carried out into iterations that depart from it.
      if [ "$policy" = pooch ]; then
        grep -q '^pooch: plan: policy pooch .* carried out' "$work/pooch.err" ||
          fail "pooch: no plan carried out: $(grep 'plan:' "$work/pooch.err")"
      fi
      choices_of "$policy"
      cmp -s "$work/incore.choices" "$work/$policy.choices" ||
        fail "$policy: iterations differ from in-core (losses or $dynamic): $(diff "$work/incore.choices" "$work/$policy.choices" | head -4)"
      departures=$(awk '$2 == "iterations:" { print $10 }' "$work/$policy.err")
      report="$report,departures=$departures"
      # A gate pattern or an image side the profile did not have is a departure. (moe's
      # iterations look alike to pooch whichever experts run; dtr follows no profile.)
      if [ "$dynamic" != experts ] && [ "$policy" != dtr ] && [ "${departures:-0}" -lt 1 ]; then
        fail "$policy: no iteration departed from the profile"
      fi
    fi
  done
  if [ -n "$dynamic" ]; then
    # pooch above ran with its pilot model on (Note [Pilot model]); each of its two models must
    # leave the parameters and the choices as in-core too, and the summary shows its line.
    for pilot in ngram stump; do
      POOCH_PILOT=$pilot
      export POOCH_PILOT
      run "pilot-$pilot" "$pooch" run --policy pooch -- "$bin" "$@"
      unset POOCH_PILOT
      [ "$rc" -eq 0 ] || fail "pilot $pilot: exit $rc"
      same_checksum "pilot-$pilot"
      choices_of "pilot-$pilot"
      cmp -s "$work/incore.choices" "$work/pilot-$pilot.choices" || fail "pilot $pilot: iterations differ from in-core"
      grep -q "^pooch: pilot: mode $pilot blocks [1-9]" "$work/pilot-$pilot.err" ||
        fail "pilot $pilot: no pilot line with blocks: $(grep 'pilot:' "$work/pilot-$pilot.err")"
    done
    grep -q '^pooch: pilot: mode on ' "$work/pooch.err" || fail "pooch: no pilot line"
    report="$report $(awk '$2 == "pilot:" { for (i = 1; i < NF; i++) if ($i == "accuracy") printf "%s,", $(i + 1) }' "$work/pilot-stump.err")"
  fi
  if [ -n "$own_kernels" ]; then
    [ "$kernel_replays_total" -gt 0 ] || fail "no plan replayed a kernel"
    report="$report kernel_replays:$kernel_replays_total"
  fi
  echo "ok: $model at $percent % ($SIMGPU_MEMORY bytes), checksum $sum; keep/swap/recompute:$report"
  ;;

plan_switching)
  # Note [Departed references] and Note [Switching references] (core/profile/
  # iteration_tracker.h): args POOCH CNN_TRAIN MODEL. 12 iterations of a dynamic workload
  # (skipnet's gate patterns, tiny-vary's image sides) under pooch, at 40 % of the in-core peak
  # with the hazard checker at error. A shape first met in a departed iteration is planned from
  # that iteration, and a later iteration of a planned shape switches to its plan where it parts
  # from the one followed: the summary counts the switches (at least 2) and plans (at least 2),
  # the trace has a "plan switched" instant for each, and the parameters and every iteration's
  # choices and loss are in-core's. skipnet's shapes part at a gate, mid-forward, so its
  # switches come after position 0 and carry the slots of the iteration's allocations so far.
  need_simgpu
  pooch=$arg
  bin=$5
  model=${6:-skipnet}
  case $model in
    skipnet) set -- --model skipnet --batch 64 --iters 12 --nvtx ;;
    tiny-vary) set -- --model tiny --batch 64 --vary-image 32,44 --iters 12 --nvtx ;;
    *) fail "unknown model $model" ;;
  esac
  pooch_at_40_like_incore "$@"
  line=$(grep '^pooch: plan_cache:' "$work/pooch.err") || fail "no plan_cache: line"
  switches=$(echo "$line" | awk '{ for (i = 3; i < NF; i++) if ($i == "switches") print $(i + 1) }')
  entries=$(echo "$line" | awk '{ for (i = 3; i < NF; i++) if ($i == "entries") print $(i + 1) }')
  [ "${switches:-0}" -ge 2 ] || fail "fewer than 2 plan switches: $line"
  [ "${entries:-0}" -ge 2 ] || fail "fewer than 2 plans: $line"
  positions=$(grep -o '"name":"plan switched"[^}]*"args":{"position":[0-9]*' "$work/trace.json" |
    sed 's/.*"position"://')
  [ "$(echo "$positions" | grep -c .)" -eq "$switches" ] ||
    fail "the trace has $(echo "$positions" | grep -c .) plan switched instants, the summary $switches"
  if [ "$model" = skipnet ]; then
    echo "$positions" | awk '$1 > 0 { found = 1 } END { exit !found }' ||
      fail "skipnet: no switch mid-iteration (positions: $(echo "$positions" | tr '\n' ' '))"
  fi
  echo "ok: $model at 40 % ($SIMGPU_MEMORY bytes), checksum $sum; $line; switched at $(echo "$positions" | tr '\n' ' ')"
  ;;

measured_choice)
  # Note [Measured choice] (core/exec/measured_choice.h): args POOCH CNN_TRAIN. moe (top 2 of 16)
  # at 40 % of the in-core peak, 30 iterations under pooch with the hazard checker at error: its
  # plan diverges at the chosen experts, is tried followed, set aside and set aside with the pilot
  # acting, and one mode is kept; every iteration's choices and loss and the parameters are
  # in-core's, and the trace marks the set-aside iterations and the verdict.
  need_simgpu
  pooch=$arg
  bin=$5
  set -- --model moe --batch 16 --experts 16 --top-k 2 --iters 30 --nvtx
  pooch_at_40_like_incore "$@"
  line=$(grep '^pooch: choice:' "$work/pooch.err") || fail "no choice: line"
  echo "$line" | awk '{ if ($4 != 1 || $6 + $8 + $10 != 1 || $12 < 6) exit 1 }' ||
    fail "the plan was not tried through its three modes to a verdict: $line"
  aside=$(grep -o '"name":"plan set aside"' "$work/trace.json" | grep -c .)
  [ "$aside" -eq "$(echo "$line" | awk '{ print $12 }')" ] ||
    fail "the trace has $aside plan set aside instants: $line"
  grep -q '"name":"measured choice"' "$work/trace.json" || fail "no measured choice instant"
  # Note [Overwritten allocations] (core/residency/residency.cc): a swapped-out expert's weight
  # gradients come back for the next backward that chooses it, whose GEMM (beta zero) overwrites
  # them whole, without a copy; the parameters above are in-core's all the same.
  over=$(awk '$2 == "swaps:" { for (i = 3; i < NF; i++) if ($i == "overwritten_ins") print $(i + 1) }' "$work/pooch.err")
  [ "${over:-0}" -gt 0 ] || fail "no allocation came back overwritten: $(grep 'swaps:' "$work/pooch.err")"
  # Note [Free reserve] (core/residency/residency_evict.cc): the set-aside iterations of the
  # trial kept room free after their ops.
  reserve=$(awk '$2 == "swaps:" { for (i = 3; i < NF; i++) if ($i == "reserve_outs") print $(i + 1) }' "$work/pooch.err")
  [ "${reserve:-0}" -gt 0 ] || fail "no swap-out kept the free reserve: $(grep 'swaps:' "$work/pooch.err")"
  echo "ok: moe top-2 at 40 % ($SIMGPU_MEMORY bytes), checksum $sum; $line; overwritten_ins $over; reserve_outs $reserve"
  ;;

model_state)
  # Issue 12: model state that does not fit. vgg16 (b2, 32x32, 10 classes) holds 403.7 MB of
  # parameters, gradients and momentum against a 406.3 MB in-core peak; at 60 % of that peak
  # pooch must plan the weights' idle intervals (their wrap from the optimizer update to the next
  # forward use included) and train bit for bit under the hazard checker. The run's profile,
  # planned again by `pooch plan` (whose defaults are the run's), shows a wrapping interval swapped.
  need_simgpu
  pooch=$arg
  bin=$5
  set -- --model vgg16 --batch 2 --image 32 --classes 10 --iters 5
  incore_reference "$@"
  state=$((33638218 * 3 * 4))
  SIMGPU_MEMORY=$((peak * 60 / 100))
  export SIMGPU_MEMORY
  [ "$SIMGPU_MEMORY" -lt "$state" ] || fail "the limit is not below the model state"
  POOCH_PROFILE_OUT=$work/profile.json
  export POOCH_PROFILE_OUT
  run planned "$pooch" run --policy pooch -- "$bin" "$@"
  unset POOCH_PROFILE_OUT
  [ "$rc" -eq 0 ] || fail "pooch: exit $rc"
  same_checksum planned
  grep -q '^pooch: plan: policy pooch .* carried out' "$work/planned.err" ||
    fail "no plan carried out: $(grep 'plan:' "$work/planned.err")"
  limit=$(awk '$2 == "memory:" { print $4 }' "$work/planned.err")
  run replan "$pooch" plan --profile "$work/profile.json" --memory "$limit" --policy pooch \
    --json "$work/plan.json"
  [ "$rc" -eq 0 ] || fail "pooch plan on the run's profile: exit $rc"
  python3 - "$work/plan.json" <<'PY' || fail "no weight leaves the device: see above"
import json, sys
plan = json.load(open(sys.argv[1]))
wraps = [d for d in plan["decisions"] if d["wraps"] and d["decision"] == "swap"]
print("wrapping intervals swapped:", len(wraps), "of", sum(1 for d in plan["decisions"] if d["wraps"]))
assert wraps, "no wrapping interval is swapped"
PY
  echo "ok: vgg16 at 60 % ($SIMGPU_MEMORY bytes < model state $state), checksum $sum"
  ;;

lineage)
  # POOCH_LINEAGE_OUT (core/lineage/lineage.h): args POOCH CNN_TRAIN. tiny at 50 % of its
  # in-core peak under pooch, whose plan recomputes there: the file is a pooch-lineage document whose
  # replays equal the summary's, the training still bit for bit; under demand (nothing
  # recomputes) one line says so and no file is written.
  need_simgpu
  pooch=$arg
  bin=$5
  set -- --model tiny --batch 64 --iters 8
  incore_reference "$@"
  SIMGPU_MEMORY=$((peak * 50 / 100))
  export SIMGPU_MEMORY
  POOCH_LINEAGE_OUT=$work/lineage.json
  export POOCH_LINEAGE_OUT
  run planned "$pooch" run --policy pooch -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "pooch: exit $rc"
  same_checksum planned
  replays=$(grep '^pooch: recompute:' "$work/planned.err" | awk '{ print $12 }')
  [ "${replays:-0}" -gt 0 ] || fail "pooch: no replay, nothing to check"
  python3 - "$work/lineage.json" "$replays" <<'PY' || fail "lineage file: see above"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "pooch-lineage" and doc["version"] == 1, doc.get("format")
assert isinstance(doc["recipes"], list), "no recipes list"
for r in doc["recipes"]:
    assert r["output"].startswith("0x") and r["output_bytes"] > 0 and r["name"], r
assert doc["stats"]["replays"] == int(sys.argv[2]), (doc["stats"], sys.argv[2])
PY
  POOCH_LINEAGE_OUT=$work/none.json
  run demand "$pooch" run --policy demand -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "demand: exit $rc"
  grep -q '^pooch: POOCH_LINEAGE_OUT: nothing recomputes under policy demand' "$work/demand.err" ||
    fail "demand: no line about the lineage file"
  [ ! -e "$work/none.json" ] || fail "demand: a lineage file was written"
  echo "ok: lineage file with $replays replays"
  ;;

replay_check)
  # POOCH_CHECK_REPLAYS (Note [Replay check] in core/recompute/replay_check.h): args POOCH
  # CNN_TRAIN MODEL. MODEL (tiny; unet-bias for chains: convolutions biased and activated in
  # place, Note [Chained recipes]) at 50 % of its in-core peak under pooch, whose plan recomputes
  # there: every replay is compared with the copy of its dropped map and matches (no `replay
  # check:` line, exit 0), the replay_check: line counts as many checked replays as the
  # recompute: line counts replays, more than none, in the summary file too, and the training
  # stays bit for bit under the hazard checker.
  need_simgpu
  pooch=$arg
  bin=$5
  model=${6:-tiny}
  case $model in
    tiny) set -- --model tiny --batch 64 --iters 8 ;;
    unet-bias) set -- --model unet --batch 16 --image 64 --iters 4 --conv-bias ;;
    *) fail "replay_check: no model $model" ;;
  esac
  incore_reference "$@"
  SIMGPU_MEMORY=$((peak * 50 / 100))
  export SIMGPU_MEMORY
  run checked env POOCH_CHECK_REPLAYS=1 POOCH_SUMMARY_FILE="$work/summary.json" \
    "$pooch" run --policy pooch -- "$bin" "$@"
  grep '^pooch: replay check:' "$work/checked.err" && fail "a replay did not rebuild its map"
  [ "$rc" -eq 0 ] || fail "pooch: exit $rc"
  same_checksum checked
  replays=$(grep '^pooch: recompute:' "$work/checked.err" | awk '{ print $12 }')
  checked=$(grep '^pooch: replay_check:' "$work/checked.err" | awk '{ print $4 }')
  [ "${replays:-0}" -gt 0 ] || fail "pooch: no replay, nothing to check"
  [ "${checked:-0}" -eq "$replays" ] || fail "$replays replays, ${checked:-no} checked"
  python3 - "$work/summary.json" "$replays" <<'PY' || fail "summary file: see above"
import json, sys
check = json.load(open(sys.argv[1]))["detail"]["replay_check"]
assert check["checked"] == int(sys.argv[2]) and check["unchecked"] == 0, check
assert check["checked_bytes"] > 0 and check["peak_held_bytes"] > 0, check
PY
  echo "ok: $checked of $replays replays checked bit for bit"
  grep -E '^pooch: (replay_check|recompute):' "$work/checked.err"
  ;;

replay_check_stop)
  # POOCH_CHECK_REPLAYS stops a replay that cannot rebuild its map (Note [Replay check]): args
  # POOCH PROBE (replay_check_probe.cc). Its GEMM outputs are recomputed by pooch's plan at
  # 6 MiB; its kernel k_twice is analysed exact (reads W_0 only, sm_90 SASS on an h100-pcie5),
  # and with REPLAY_CHECK_PROBE_LIE its CPU twin writes W_0 all the same, as a wrong verdict
  # would on a GPU. Honest: every replay checked, the bytes as without pooch. Lying: one
  # `replay check:` line naming the GEMM, the 1 MiB map and the first differing offset, exit 70,
  # no summary; without the check the same run ends with other bytes than without pooch (what
  # the check exists to catch).
  need_simgpu
  pooch=$arg
  probe=$5
  SIMGPU_PRESET=h100-pcie5
  POOCH_ITERATION_MARKER=sync
  POOCH_MEMORY_LIMIT=6MiB
  POOCH_KERNEL_CACHE=$work/cache
  export SIMGPU_PRESET POOCH_ITERATION_MARKER POOCH_MEMORY_LIMIT POOCH_KERNEL_CACHE
  checksum() { awk '$1 == "replay_check_probe" && $2 == "checksum" { print $3 }' "$work/$1.out"; }
  run honest_incore "$probe"
  run lying_incore env REPLAY_CHECK_PROBE_LIE=1 "$probe"
  if [ -z "$(checksum honest_incore)" ] || [ -z "$(checksum lying_incore)" ]; then
    fail "the probe without pooch: $(cat "$work/honest_incore.out" "$work/lying_incore.out")"
  fi
  run honest env POOCH_CHECK_REPLAYS=1 "$pooch" run --policy pooch -- "$probe"
  [ "$rc" -eq 0 ] || fail "honest: exit $rc: $(grep '^pooch: replay check' "$work/honest.err")"
  grep -q '^pooch: kernel analysis: _Z7k_twicePfPKfi .* in [0-9.]* s$' "$work/honest.err" ||
    fail "honest: k_twice was not analysed (nvdisasm, cuobjdump: scripts/setup-cuda-tools.sh)"
  [ "$(checksum honest)" = "$(checksum honest_incore)" ] || fail "honest: other bytes than without pooch"
  checked=$(grep '^pooch: replay_check:' "$work/honest.err" | awk '{ print $4 }')
  [ "${checked:-0}" -gt 0 ] || fail "honest: no replay checked"
  run lying env REPLAY_CHECK_PROBE_LIE=1 POOCH_CHECK_REPLAYS=1 "$pooch" run --policy pooch -- "$probe"
  [ "$rc" -eq 70 ] || fail "lying: exit $rc, not 70"
  [ "$(grep -c '^pooch: replay check:' "$work/lying.err")" -eq 1 ] || fail "lying: want one line"
  grep -Eq '^pooch: replay check: cublasSgemm_v2 rebuilt the map at 0x[0-9a-f]+ \(1048576 bytes\) with other bytes than were dropped: first at offset [0-9]+ \(0x[0-9a-f]{2} dropped, 0x[0-9a-f]{2} rebuilt\)$' \
    "$work/lying.err" || fail "lying: $(grep '^pooch: replay check:' "$work/lying.err")"
  grep -q '^pooch: replay_check:' "$work/lying.err" && fail "lying: a summary after the stop"
  [ -z "$(checksum lying)" ] || fail "lying: the program went on"
  run unchecked env REPLAY_CHECK_PROBE_LIE=1 "$pooch" run --policy pooch -- "$probe"
  [ "$rc" -eq 0 ] || fail "unchecked: exit $rc"
  [ "$(checksum unchecked)" != "$(checksum lying_incore)" ] ||
    fail "unchecked: the replays were right after all (nothing for the check to catch)"
  echo "ok: $checked replays checked; $(grep '^pooch: replay check:' "$work/lying.err")"
  ;;

replay_check_unknown)
  # The same probe and lying twin as replay_check_stop, with POOCH_KERNEL_ANALYSIS=off: k_twice is
  # then unknown and counts as writing all its words point into (Note [Kernel writes]), W_0
  # included, a small block (Note [Small blocks in the lineage]), so the recipes that read W_0 go
  # before it runs and the check finds nothing: exit 0, the bytes as without pooch. Its output
  # is a small block too, then (REPLAY_CHECK_PROBE_BIG_OUT=1) one of the manager's. Args POOCH
  # PROBE.
  need_simgpu
  pooch=$arg
  probe=$5
  SIMGPU_PRESET=h100-pcie5
  POOCH_ITERATION_MARKER=sync
  POOCH_MEMORY_LIMIT=6MiB
  REPLAY_CHECK_PROBE_LIE=1
  export SIMGPU_PRESET POOCH_ITERATION_MARKER POOCH_MEMORY_LIMIT REPLAY_CHECK_PROBE_LIE
  checksum() { awk '$1 == "replay_check_probe" && $2 == "checksum" { print $3 }' "$work/$1.out"; }
  run incore "$probe"
  [ -n "$(checksum incore)" ] || fail "the probe without pooch: $(cat "$work/incore.out")"
  for out in small big; do
    big=0
    [ "$out" = big ] && big=1
    run "unknown_$out" env REPLAY_CHECK_PROBE_BIG_OUT=$big POOCH_CHECK_REPLAYS=1 \
      POOCH_KERNEL_ANALYSIS=off "$pooch" run --policy pooch -- "$probe"
    [ "$rc" -eq 0 ] ||
      fail "$out output: exit $rc: $(grep '^pooch: replay check:' "$work/unknown_$out.err")"
    [ "$(checksum "unknown_$out")" = "$(checksum incore)" ] ||
      fail "$out output: other bytes than without pooch"
    checked=$(grep '^pooch: replay_check:' "$work/unknown_$out.err" | awk '{ print $4 }')
    [ "${checked:-0}" -gt 0 ] || fail "$out output: no replay checked"
    echo "ok: $out output: $(grep '^pooch: replay_check:' "$work/unknown_$out.err")"
  done
  ;;

plot)
  # POOCH_PLOT (issue 12; core/plot/plot.h): args POOCH CNN_TRAIN. tiny on a 20 MiB simgpu (it
  # needs about 30 MB) under `pooch run --policy pooch`, profiled under demand swapping so that
  # the plan is made in the third iteration. Without gnuplot, or with a path that cannot be
  # written, one line and the training goes on; with gnuplot (else the case is skipped, 77) the
  # PNG is drawn (`pooch run --plot`), by a gnuplot that runs without LD_PRELOAD or any
  # POOCH_*/SIMGPU_* variable.
  need_simgpu
  unset POOCH_LOG  # its checks of POOCH_PLOT lines are at the default level
  pooch=$arg
  bin=$5
  SIMGPU_MEMORY=20MiB
  POOCH_PROFILE_SWAP=demand
  export SIMGPU_MEMORY POOCH_PROFILE_SWAP
  set -- --model tiny --batch 64 --iters 3
  mkdir "$work/empty" "$work/bin"
  run nognuplot env PATH="$work/empty" POOCH_PLOT="$work/none.png" \
    "$pooch" run --policy pooch -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "without gnuplot: exit $rc"
  [ "$(grep -c '^pooch: POOCH_PLOT: ' "$work/nognuplot.err")" -eq 1 ] &&
    grep -q '^pooch: POOCH_PLOT: gnuplot is not installed.*gnuplot-nox' "$work/nognuplot.err" ||
    fail "without gnuplot: want one line naming gnuplot-nox"
  [ ! -e "$work/none.png" ] || fail "without gnuplot: a file was left"
  run unwritable env POOCH_PLOT="$work/no/such/folder/plan.png" \
    "$pooch" run --policy pooch -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "unwritable POOCH_PLOT: exit $rc"
  [ "$(grep -c '^pooch: POOCH_PLOT: ' "$work/unwritable.err")" -eq 1 ] &&
    grep -q '^pooch: POOCH_PLOT: cannot write' "$work/unwritable.err" ||
    fail "unwritable POOCH_PLOT: want one line saying so"
  gnuplot=$(command -v gnuplot) || {
    echo "SKIP: gnuplot is not installed (scripts/setup.sh installs gnuplot-nox): no PNG drawn"
    exit 77
  }
  # The gnuplot pooch finds first records the environment it was given.
  printf '#!/bin/sh\nenv >"%s/gnuplot.env"\nexec "%s" "$@"\n' "$work" "$gnuplot" >"$work/bin/gnuplot"
  chmod +x "$work/bin/gnuplot"
  run plot env PATH="$work/bin:$PATH" "$pooch" run --policy pooch --plot "$work/plan.png" -- \
    "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "POOCH_PLOT: exit $rc"
  grep -q '^pooch: POOCH_PLOT' "$work/plot.err" && fail "POOCH_PLOT: $(grep POOCH_PLOT "$work/plot.err")"
  [ -s "$work/gnuplot.env" ] || fail "POOCH_PLOT: gnuplot was not run"
  grep -E '^(LD_PRELOAD|POOCH_|SIMGPU_)' "$work/gnuplot.env" &&
    fail "POOCH_PLOT: gnuplot ran with pooch's or simgpu's variables (above)"
  magic=$(head -c 8 "$work/plan.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
  [ "$magic" = 89504e470d0a1a0a ] || fail "POOCH_PLOT: $work/plan.png is not a PNG ('$magic')"
  size=$(wc -c <"$work/plan.png")
  [ "$size" -gt 10000 ] || fail "POOCH_PLOT: the PNG is only $size bytes"
  echo "ok: POOCH_PLOT drew a $size-byte PNG; without gnuplot or a writable path, one line"
  ;;

summary)
  # Issue 39: the summary in words (Note [Summary in words] in interpose/process/summary_words.h)
  # and POOCH_SUMMARY_FILE, under a limit given as a percentage: args POOCH CNN_TRAIN. tiny
  # under `pooch run --memory-limit 40%` (NVTX iterations) on a device the size of its in-core
  # peak, so that 40 % of the device is 40 % of the peak. At the default level: the plain lines
  # and neither a detailed nor a phase line; at info: the phase lines and the detailed lines as
  # well. Each run's JSON file holds the figures of its lines. Parameters as in core.
  need_simgpu
  pooch=$arg
  bin=$5
  set -- --model tiny --batch 64 --iters 6 --nvtx
  incore_reference "$@"
  SIMGPU_MEMORY=$peak
  POOCH_ITERATION_MARKER=nvtx
  export SIMGPU_MEMORY POOCH_ITERATION_MARKER
  unset POOCH_LOG
  run plain env POOCH_SUMMARY_FILE="$work/plain.json" "$pooch" run --memory-limit 40% -- "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "default level: exit $rc"
  same_checksum plain
  grep -q "^pooch: limit [0-9.]* [KMG]iB (40% of the device's [0-9.]* [KMG]iB), policy pooch: peak [0-9.]* [KMG]iB on the device, [0-9.]* [KMG]\{0,1\}i\{0,1\}B in host memory\$" "$work/plain.err" ||
    fail "no limit line"
  grep -q '^pooch: moved [0-9.]* [KMG]iB to host memory and [0-9.]* [KMG]\{0,1\}i\{0,1\}B back ([0-9]* swap-outs\{0,1\}, [0-9]* swap-ins\{0,1\})' "$work/plain.err" ||
    fail "nothing moved at 40 %"
  grep -q '^pooch: plan of policy pooch: keep [0-9]*, swap [0-9]*, recompute [0-9]* intervals; iteration predicted [0-9.]* ms, measured [0-9.]* ms$' "$work/plain.err" ||
    fail "no plan line with its predicted and measured iteration"
  grep -q '^pooch: \(nothing went wrong$\|went wrong: \)' "$work/plain.err" || fail "no line on what went wrong"
  grep '^pooch: \(summary\|memory\|swaps\|reuse\|host\|host_steady\|small\|opaque\|calls\|iterations\|plan\|plan_run\|plan_cache\|pilot\|recompute\): ' "$work/plain.err" &&
    fail "a detailed line at the default level"
  grep '^pooch: \(iteration found\|profiled\|planned\|carrying out the plan\): ' "$work/plain.err" &&
    fail "a phase line at the default level"
  run info env POOCH_SUMMARY_FILE="$work/info.json" "$pooch" run --memory-limit 40% --log info -- \
    "$bin" "$@"
  [ "$rc" -eq 0 ] || fail "info: exit $rc"
  same_checksum info
  for phase in 'iteration found: [0-9]* events (marker nvtx)$' 'profiled: [0-9]* ops, [0-9]* tensors, under ' \
      'planned: policy pooch keeps [0-9]*, swaps [0-9]* and recomputes [0-9]* intervals; predicted iteration ' \
      'carrying out the plan: [0-9]* maps swapped, [0-9]* recomputed$'; do
    grep -q "^pooch: $phase" "$work/info.err" || fail "info: no phase line '$phase'"
  done
  python3 - "$peak" "$work/plain.json" "$work/plain.err" "$work/info.json" "$work/info.err" <<'PY' ||
import json, sys
total = int(sys.argv[1])
def check(json_path, err_path, detailed):
    j = json.load(open(json_path))
    lines = [l[len("pooch: "):].rstrip("\n") for l in open(err_path) if l.startswith("pooch: ")]
    def fail(why):
        sys.exit(f"{json_path}: {why}")
    if j["policy"] != "pooch" or not j["managed"]:
        fail(f"policy {j['policy']}, managed {j['managed']}")
    if j["limit_percent"] != 40 or j["device_total_bytes"] != total:
        fail(f"limit_percent {j['limit_percent']}, device_total_bytes {j['device_total_bytes']}")
    if j["limit_bytes"] != int(total * 0.4):
        fail(f"limit_bytes {j['limit_bytes']}, want 40 % of {total}")
    if j["swap_outs"] <= 0 or j["bytes_swapped_out"] <= 0:
        fail("nothing swapped out at 40 %")
    for plain in j["lines"]:
        if plain not in lines:
            fail(f"plain line not on stderr: {plain}")
    d = j["detail"]
    p = j["profiling"]
    pairs = [(d["memory"]["limit"], j["limit_bytes"]),
             (d["memory"]["peak_device_bytes"], j["peak_device_bytes"]),
             (d["swaps"]["out"], j["swap_outs"]), (d["swaps"]["out_bytes"], j["bytes_swapped_out"]),
             (d["swaps"]["in"], j["swap_ins"]), (d["swaps"]["in_bytes"], j["bytes_swapped_in"]),
             (d["plan"]["keep"], p["plan"]["keep"]), (d["plan"]["swap"], p["plan"]["swap"]),
             (d["plan"]["recompute"], p["plan"]["recompute"]),
             (d["plan"]["predicted_iteration_ms"], p["plan"]["predicted_iteration_ms"]),
             (d["plan_run"]["safety_net_swap_ins"], p["safety_net_swap_ins"]),
             (d["iterations"]["measured_iteration_ms"], p["measured_iteration_ms"]),
             (d["iterations"]["profiles"], p["profiles"])]
    for got, want in pairs:
        if got != want:
            fail(f"detail {got} != {want}")
    if p["measured_iteration_ms"] <= 0 or not p["carried_out"]:
        fail("no plan carried out and measured")
    if not any(c["top"] > 0 for c in d["calls"].values()):
        fail("no call counted")
    # Issue 38: pooch's host time and each driver memory call per steady iteration (Note
    # [Steady iterations] in interpose/process/steady_host.h).
    # tiny's 6 iterations may end before one is steady; the line then says so.
    steady = d["host_steady"]
    if steady.get("iterations", 0) >= 1:
        if steady["host_ms"] <= 0:
            fail(f"host_steady: no host time: {steady['text']}")
        for call in ("cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate", "cuMemRelease",
                     "cuMemMap", "cuMemSetAccess", "cuMemUnmap"):
            if not steady.get(call, -1) >= 0:
                fail(f"host_steady: no {call} count")
    elif "iterations 0 (no steady iteration" not in steady["text"]:
        fail(f"host_steady: {steady['text']}")
    # At info, each detailed line on stderr is the JSON's text of its topic.
    for topic, obj in d.items():
        if topic == "calls":
            continue
        on_stderr = [l for l in lines if l.startswith(topic + ": ")]
        if detailed and (not on_stderr or on_stderr[-1] != f"{topic}: {obj['text']}"):
            fail(f"{topic}: the JSON's text is not stderr's line")
        if not detailed and on_stderr:
            fail(f"{topic}: a detailed line at the default level")
    return j
plain = check(sys.argv[2], sys.argv[3], False)
check(sys.argv[4], sys.argv[5], True)
print("ok: " + " | ".join(plain["lines"]))
PY
    fail "the summary file does not hold the summary's figures"
  ;;

*)
  fail "unknown case"
  ;;
esac
exit 0
