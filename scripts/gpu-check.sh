#!/usr/bin/env bash
# The checks that need a real GPU (issue 15, point 3; issue 14, point 2), in one command that
# writes a markdown report. Runs on a machine with an NVIDIA GPU, its driver, Python with torch
# and torchvision installed, and no package registry: nothing is installed or downloaded.
#
# Usage:
#   scripts/gpu-check.sh --pack [BUILD]   on the development machine: copies what the check runs
#                                         (bin/pooch, lib/libpooch.so, bin/cnn_train, stripped of
#                                         debug info: about 20 MB) from BUILD (default build/)
#                                         into gpu-carry/ (ignored by git) at the repository root
#   scripts/gpu-check.sh [DIR]            on the GPU machine: runs the checks with DIR's binaries
#                                         (default gpu-carry/, else build/)
# libpooch.so and pooch need only the C and C++ runtime (docs/gpus.md, "What libpooch.so needs"), so
# a build made here runs there. cnn_train links the CUDA runtime, cuDNN and cuBLAS dynamically:
# the check finds them in the NVIDIA wheels beside torch (site-packages/nvidia/*/lib).
#
# The checks, each at POOCH_MEMORY_LIMIT = 40 % of the in-core run's peak (tiny also at 60 %):
#   1. cnn_train --model resnet50 (batch CNN_BATCH): params_checksum under pooch, swap-all and
#      superneurons equals in-core (issue 5, point 5), with each one's throughput;
#   2. torchvision ResNet-50 and a TransformerEncoder (tests/gpu/torch_train.py; deterministic
#      algorithms, TF32 off): the parameters' sha256 under pooch equals in-core; throughput of
#      in-core, pooch, torch.utils.checkpoint on every block and save_on_cpu(pin_memory=True),
#      all at the same batch; and pooch once more with POOCH_CHECK_REPLAYS=1 (Note [Replay
#      check]): every replay rebuilds the dropped map's bytes (no `pooch: replay check:` line,
#      not exit 70), the parameters as in-core, and the count of checked replays;
#   3. the transformer of tests/simgpu/torch/transformer_loop.py: max_memory_allocated, to
#      compare with simgpu's figure (docs/simgpu.md, "Unmodified PyTorch on simgpu");
#   4. the dynamic networks of bench_dynamic.sh (skipnet, moe top 2, tiny with --vary-image,
#      ITERS_DYNAMIC iterations, NVTX iteration marks): params_checksum under pooch (its pilot
#      on) and under pooch with POOCH_PILOT=off equals in-core.
# Each run is stopped after RUN_TIMEOUT seconds (a hang is reported as exit 124, not waited on).
# Environment: PYTHON (default python3), CNN_BATCH (64), TORCH_RESNET_BATCH (64),
#              TRANSFORMER_BATCH (32), ITERS (12), ITERS_DYNAMIC (20), RUN_TIMEOUT (300),
#              REPORT (default DIR/gpu-check.md), WORK (a folder that keeps every run's output;
#              default a temporary one, removed at exit), TRACE_TORCH (set: each torch model once
#              more under pooch with POOCH_TRACE, into WORK).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2

if [ "${1:-}" = --pack ]; then
  build=${2:-build}
  mkdir -p gpu-carry/bin gpu-carry/lib
  for f in bin/pooch lib/libpooch.so bin/cnn_train; do
    [ -f "$build/$f" ] || { echo "gpu-check: $build/$f is missing (build first)" >&2; exit 2; }
    objcopy --strip-debug "$build/$f" "gpu-carry/$f"
  done
  grep -qx '/gpu-carry/' .git/info/exclude 2>/dev/null || echo /gpu-carry/ >>.git/info/exclude
  du -sh gpu-carry
  exit 0
fi

dir=${1:-}
if [ -z "$dir" ]; then
  if [ -x gpu-carry/bin/pooch ]; then dir=gpu-carry; else dir=build; fi
fi
python=${PYTHON:-python3}
report=${REPORT:-$dir/gpu-check.md}
iters=${ITERS:-12}
for f in bin/pooch lib/libpooch.so bin/cnn_train; do
  [ -x "$dir/$f" ] || [ -f "$dir/$f" ] || { echo "gpu-check: $dir/$f is missing" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null || { echo "gpu-check: no nvidia-smi: this needs a GPU" >&2; exit 2; }
"$python" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null ||
  { echo "gpu-check: $python has no torch/torchvision with a usable GPU" >&2; exit 2; }

# The CUDA libraries of torch's NVIDIA wheels, for cnn_train.
nvlibs=$("$python" - <<'PY'
import glob, os, site
dirs = []
for sp in site.getsitepackages():
    dirs += sorted(d for d in glob.glob(os.path.join(sp, "nvidia", "*", "lib")) if os.path.isdir(d))
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH="$nvlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
pooch="$dir/bin/pooch"
run_timeout=${RUN_TIMEOUT:-300}

# value FILE KEY: the value after KEY on the last line that starts with it.
value() { awk -v k="$2" '$1 == k { v = $2 } END { print v }' "$1"; }
# cnn_value FILE KEY: the median over the second half of the iteration lines of the value after
# KEY (cnn_train's img_per_s, or ms): one iteration on a GPU varies by 20 % and more, and the
# first ones include pooch's profiling.
cnn_value() {
  awk -v k="$2" '/^iter / { for (i = 1; i < NF; i++) if ($i == k) v[n++] = $(i + 1) }
    END {
      if (n == 0) exit
      m = 0
      for (i = int(n / 2); i < n; i++) h[m++] = v[i]
      for (i = 1; i < m; i++) for (j = i; j > 0 && h[j - 1] > h[j]; j--) { t = h[j]; h[j] = h[j - 1]; h[j - 1] = t }
      print (m % 2) ? h[int(m / 2)] : (h[m / 2 - 1] + h[m / 2]) / 2
    }' "$1"
}

{
  echo "# pooch GPU check"
  echo
  echo "- date: $(date -u +%FT%TZ)"
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
  echo "- torch: $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())')"
  echo "- binaries: $dir ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown))"
  echo
} >"$report"
status=0

# profile_line PROFILE INCORE_MS: the profile's op times against the in-core iteration's time
# (a plan is only as good as its op times).
profile_line() {
  "$python" - "$1" "$2" 2>/dev/null <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
total = sum(o["duration_us"] for o in ops) / 1000
print(f"\nProfile: {len(ops)} ops; their device times sum to {total:.3f} ms; "
      f"the in-core iteration took {sys.argv[2]} ms.")
PY
}

# cnn_case TITLE POLICIES ARGS...: cnn_train ARGS in-core, then under each of POLICIES at
# $percent % (default 40) of the in-core peak (a policy's name with -nopilot: that policy with POOCH_PILOT=off, as in
# bench_dynamic.sh); one table of img/s and params_checksum against in-core's.
cnn_case() {
  local name=${1// /_} policies=$2 peak limit a b p pilot verdict rc percent=${percent:-40}
  shift 2
  timeout "$run_timeout" "$dir/bin/cnn_train" "$@" >"$work/$name-incore.out" 2>&1
  peak=$(value "$work/$name-incore.out" peak_device_bytes)
  limit=$((${peak:-0} * percent / 100))
  a=$(value "$work/$name-incore.out" params_checksum)
  {
    echo "## cnn_train $*: limit $percent % of ${peak:-?} bytes"
    echo
    echo "| run | exit | img/s | params_checksum | verdict |"
    echo "|---|---|---|---|---|"
    echo "| in-core | - | $(cnn_value "$work/$name-incore.out" img_per_s) | $a | |"
  } >>"$report"
  for p in $policies; do
    pilot=on; [ "${p%-nopilot}" = "$p" ] || pilot=off
    POOCH_MEMORY_LIMIT=$limit POOCH_PILOT=$pilot POOCH_PROFILE_OUT="$work/$name-$p.profile.json" \
      timeout "$run_timeout" "$pooch" run --policy "${p%-nopilot}" -- \
      "$dir/bin/cnn_train" "$@" >"$work/$name-$p.out" 2>"$work/$name-$p.err"
    rc=$?
    b=$(value "$work/$name-$p.out" params_checksum)
    if [ "$rc" -ne 0 ]; then
      # The run stopped: its first error line says why (a refusal is not a wrong result).
      verdict="**FAILED**: $(grep -m1 '^pooch: error' "$work/$name-$p.err" | cut -c1-200 | sed 's/|/\\|/g')"
      status=1
    elif [ -n "$a" ] && [ "$a" = "$b" ]; then
      verdict=same
    else
      verdict="**DIFFERENT**"
      status=1
    fi
    echo "| $p | $rc | $(cnn_value "$work/$name-$p.out" img_per_s) | $b | $verdict |" >>"$report"
  done
  profile_line "$work/$name-${policies%% *}.profile.json" "$(cnn_value "$work/$name-incore.out" ms)" \
    >>"$report"
  {
    echo
    echo "pooch's summary (policy ${policies%% *}):"
    echo
    echo '```'
    grep '^pooch: ' "$work/$name-${policies%% *}.err" | grep -v '^pooch: calls:' | head -24
    echo '```'
    echo
  } >>"$report"
}

# 1. cnn_train ResNet-50.
cnn_case "cnn resnet50" "pooch swap-all superneurons" \
  --model resnet50 --batch "${CNN_BATCH:-64}" --iters "$iters"

# 2. The torch models.
for spec in "resnet50 ${TORCH_RESNET_BATCH:-64}" "transformer ${TRANSFORMER_BATCH:-32}"; do
  # shellcheck disable=SC2086  # two words: the model and its batch
  set -- $spec
  model=$1 batch=$2
  run_mode() {  # name, then the command's prefix
    local name=$1
    shift
    timeout "$run_timeout" "$@" "$python" tests/gpu/torch_train.py "$model" "${mode:-incore}" "$batch" "$iters" \
      >"$work/$model-$name.out" 2>"$work/$model-$name.err"
  }
  mode=incore run_mode incore env
  peak=$(value "$work/$model-incore.out" max_memory_allocated)
  limit=$((${peak:-0} * 40 / 100))
  mode=incore run_mode pooch env POOCH_MEMORY_LIMIT=$limit \
    POOCH_PROFILE_OUT="$work/$model-pooch.profile.json" "$pooch" run --
  # TRACE_TORCH=1: one more pooch run with POOCH_TRACE (kept in WORK, not in the table: the trace
  # costs host time), to see on the host's clock when swaps were queued and seen complete.
  if [ -n "${TRACE_TORCH:-}" ]; then
    mode=incore run_mode pooch-trace env POOCH_MEMORY_LIMIT=$limit \
      POOCH_TRACE="$work/$model-pooch.trace.json" "$pooch" run --
  fi
  # The replay check (Note [Replay check]): every dropped map copied, every replay compared.
  mode=incore run_mode pooch-check env POOCH_MEMORY_LIMIT=$limit POOCH_CHECK_REPLAYS=1 \
    POOCH_LOG=info "$pooch" run --
  check_rc=$?
  mode=checkpoint run_mode checkpoint env
  mode=save_on_cpu run_mode save_on_cpu env
  a=$(value "$work/$model-incore.out" params_sha256)
  b=$(value "$work/$model-pooch.out" params_sha256)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then verdict=same; else verdict=DIFFERENT; status=1; fi
  checked=$(grep '^pooch: replay_check:' "$work/$model-pooch-check.err" |
            awk '{ for (i = 1; i < NF; i++) if ($i == "checked") print $(i + 1) }')
  replays=$(grep '^pooch: recompute:' "$work/$model-pooch-check.err" |
            awk '{ for (i = 1; i < NF; i++) if ($i == "replays") print $(i + 1) }')
  c=$(value "$work/$model-pooch-check.out" params_sha256)
  if [ "$check_rc" -eq 0 ] && [ -n "$checked" ] && [ "$a" = "$c" ]; then
    check_verdict="no mismatch, ${checked} of ${replays:-0} replays checked, parameters same"
  else
    check_verdict="FAILED (exit $check_rc, checked '${checked}', params_sha256 $(echo "$c" | cut -c1-16))"
    status=1
  fi
  {
    echo "## torch $model, batch $batch, pooch limit 40 % of $peak bytes"
    echo
    echo "| run | img/s | max_memory_allocated | params_sha256 |"
    echo "|---|---|---|---|"
    for name in incore pooch pooch-check checkpoint save_on_cpu; do
      f="$work/$model-$name.out"
      echo "| $name | $(value "$f" img_per_s) | $(value "$f" max_memory_allocated) | $(value "$f" params_sha256 | cut -c1-16) |"
    done
    echo
    profile_line "$work/$model-pooch.profile.json" "$(cnn_value "$work/$model-incore.out" ms)"
    echo
    echo "Parameters under pooch: **$verdict**. Replay check: **$check_verdict**."
    grep '^pooch: replay check:' "$work/$model-pooch-check.err"
    echo
    echo "pooch's summary:"
    echo
    echo '```'
    grep '^pooch: ' "$work/$model-pooch.err" | grep -v '^pooch: calls:' | head -20
    tail -3 "$work/$model-pooch.err" | grep -v '^pooch: '
    echo '```'
    echo
  } >>"$report"
done

# 3. simgpu's transformer figure against the GPU's.
timeout "$run_timeout" "$python" tests/simgpu/torch/transformer_loop.py 5 >"$work/transformer-loop.out" 2>&1
{
  echo "## tests/simgpu/torch/transformer_loop.py 5"
  echo
  echo "max_memory_allocated on this GPU: $(value "$work/transformer-loop.out" max_memory_allocated) bytes (simgpu: see docs/simgpu.md)"
} >>"$report"

# 4. The dynamic networks (issue 16), iterations marked by NVTX ranges as in bench_dynamic.sh.
dyn="--iters ${ITERS_DYNAMIC:-20} --nvtx"
export POOCH_ITERATION_MARKER=nvtx
# shellcheck disable=SC2086
cnn_case "cnn skipnet" "pooch pooch-nopilot" --model skipnet --batch 64 $dyn
# shellcheck disable=SC2086
cnn_case "cnn moe top2" "pooch pooch-nopilot" --model moe --batch 16 --experts 16 \
  --top-k 2 $dyn
# shellcheck disable=SC2086
cnn_case "cnn tiny vary" "pooch pooch-nopilot" --model tiny --batch 64 \
  --vary-image 32,44 $dyn
# On a GPU, cuDNN's heuristics may pick convolution workspaces that put one op's memory above
# 40 % of this small model's peak (pooch then refuses with the pinned bytes): 60 % as well.
# shellcheck disable=SC2086
percent=60 cnn_case "cnn tiny vary 60" "pooch pooch-nopilot" --model tiny --batch 64 \
  --vary-image 32,44 $dyn
unset POOCH_ITERATION_MARKER

cat "$report"
exit $status
