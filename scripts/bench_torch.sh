#!/usr/bin/env bash
# pooch under unmodified PyTorch on simgpu (issue 15, point 1): a benchmark, not a test (it never
# fails on a slow result; it fails when a run it needs fails).
#
#   scripts/bench_torch.sh                         # build/ and build/torch-venv (scripts/test.sh)
#   BUILD_DIR=build-cc ITERS=12 scripts/bench_torch.sh
#
# For each model of tests/gpu/torch_train.py (torchvision ResNet-50; a TransformerEncoder with
# AdamW) and each preset (PRESETS, default v100-pcie3 and v100-nvlink2), in timing mode
# (SIMGPU_COMPUTE=timing, virtual time):
#   1. in-core on a large simgpu (64 GiB), no pooch: the peak (max_memory_allocated, PyTorch's
#      default allocator) and the iteration time with PYTORCH_NO_CUDA_MEMORY_CACHING=1, one
#      allocation per tensor as under pooch (simgpu charges a kernel the whole allocations its
#      words point into, so the caching allocator's segments would inflate the baseline: Note
#      [Kernel ops] in tests/simgpu/device/device_kernel.cc);
#   2. the limit: that peak / FACTOR (2.5 for ResNet-50, 2 for the transformer, as the issue asks);
#   3. PyTorch alone on a device of that size: it must raise OutOfMemoryError (torch_train.py
#      exits 3), else the batch does not need the oversubscription and the script stops;
#   4. `pooch run --memory-limit LIMIT` on the preset's 16 GiB device: the steady iteration time
#      (median of the second half of the iterations, after profiling and planning), the plan
#      (keep / swap / recompute counts), pooch's predicted_iteration_ms against its own
#      measured_iteration_ms, and the summary's opaque: line (unclassified must be 0).
# Writes build/bench/torch.md and prints it. Each pooch run takes a few minutes of this CPU.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
VENV=${POOCH_TORCH_VENV:-$ROOT/build/torch-venv}
ITERS=${ITERS:-20}
PRESETS=${PRESETS:-v100-pcie3 v100-nvlink2}
RESNET_BATCH=${RESNET_BATCH:-32}
TRANSFORMER_BATCH=${TRANSFORMER_BATCH:-16}
OUT_DIR=${OUT_DIR:-$ROOT/build/bench}
SIMGPU_RUN=$BUILD_DIR/bin/simgpu-run
POOCH=$BUILD_DIR/bin/pooch
PYTHON=$VENV/bin/python
SCRIPT=$ROOT/tests/gpu/torch_train.py

for f in "$SIMGPU_RUN" "$POOCH" "$PYTHON"; do
  [[ -x $f ]] || { echo "bench_torch: $f is missing (scripts/test.sh builds it)" >&2; exit 1; }
done
mkdir -p "$OUT_DIR"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_torch.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(env | sed -n 's/^\(SIMGPU_[A-Z_]*\|POOCH_[A-Z_]*\|PYTORCH_[A-Z_]*\)=.*/\1/p'); do
  [[ $v == POOCH_TORCH_VENV ]] || unset "$v"
done
export SIMGPU_COMPUTE=timing
# The summary's detailed lines, which this script reads, are printed at POOCH_LOG=info.
export POOCH_LOG=info

# value FILE KEY: the value after KEY on the last line that starts with it.
value() { awk -v k="$2" '$1 == k { v = $2 } END { print v }' "$1"; }
# field FILE PREFIX KEY: on the last line starting with PREFIX, the word after KEY.
field() {
  awk -v p="$2" -v k="$3" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$1"
}
# steady FILE: the median iteration ms over the second half of the iterations.
steady() {
  awk '$1 == "iter" { t[n++] = $4 } END {
    m = 0; for (i = int(n / 2); i < n; i++) s[m++] = t[i]
    for (i = 0; i < m; i++) for (j = i + 1; j < m; j++) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
    if (m == 0) print "-"; else if (m % 2) print s[int(m / 2)]; else printf "%.3f\n", (s[m / 2 - 1] + s[m / 2]) / 2
  }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
percent_error() { awk -v p="$1" -v m="$2" 'BEGIN { if (p != "" && m > 0) printf "%+.1f %%", 100 * (p - m) / m; else print "-" }'; }

# train NAME BATCH OUT ERR [ENV...] [-- PREFIX...]: one torch_train.py run; sets rc.
train() {
  local model=$1 batch=$2 out=$3 err=$4
  shift 4
  set +e
  "$@" "$PYTHON" -W ignore "$SCRIPT" "$model" incore "$batch" "$ITERS" >"$out" 2>"$err"
  rc=$?
  set -e
}

table=$work/table.md
{
  echo "| model | preset | batch | in-core peak | limit | torch alone | in-core ms | pooch ms | slowdown | plan keep/swap/recompute | predicted ms | measured ms | error | opaque calls | unclassified |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$table"
details=$work/details.md
: >"$details"

for spec in "resnet50 $RESNET_BATCH 2.5" "transformer $TRANSFORMER_BATCH 2"; do
  read -r model batch factor <<<"$spec"
  for preset in $PRESETS; do
    tag=$model-$preset
    echo "== $tag: in-core on 64 GiB" >&2
    train "$model" "$batch" "$work/$tag-incore.out" "$work/$tag-incore.err" \
      env SIMGPU_PRESET="$preset" SIMGPU_MEMORY=64GiB "$SIMGPU_RUN"
    [[ $rc -eq 0 ]] || { echo "bench_torch: $tag in-core failed ($rc):" >&2; tail -5 "$work/$tag-incore.err" >&2; exit 1; }
    peak=$(value "$work/$tag-incore.out" max_memory_allocated)
    train "$model" "$batch" "$work/$tag-incore-nc.out" "$work/$tag-incore-nc.err" \
      env SIMGPU_PRESET="$preset" SIMGPU_MEMORY=64GiB PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$SIMGPU_RUN"
    [[ $rc -eq 0 ]] || { echo "bench_torch: $tag in-core without caching failed ($rc):" >&2; tail -5 "$work/$tag-incore-nc.err" >&2; exit 1; }
    limit=$(awk -v p="$peak" -v f="$factor" 'BEGIN { printf "%d", p / f }')
    echo "== $tag: PyTorch alone on $limit bytes" >&2
    train "$model" "$batch" "$work/$tag-alone.out" "$work/$tag-alone.err" \
      env SIMGPU_PRESET="$preset" SIMGPU_MEMORY="$limit" "$SIMGPU_RUN"
    if [[ $rc -eq 3 ]]; then
      alone="OutOfMemoryError"
    else
      echo "bench_torch: $tag: PyTorch alone did not run out of memory at $limit bytes (exit $rc)" >&2
      exit 1
    fi
    echo "== $tag: pooch run --memory-limit $limit" >&2
    train "$model" "$batch" "$work/$tag-pooch.out" "$work/$tag-pooch.err" \
      env SIMGPU_PRESET="$preset" "$SIMGPU_RUN" "$POOCH" run --memory-limit "$limit" --
    [[ $rc -eq 0 ]] || {
      echo "bench_torch: $tag under pooch failed ($rc):" >&2
      grep -v '^pooch: calls' "$work/$tag-pooch.err" | tail -20 >&2
      exit 1
    }
    err=$work/$tag-pooch.err
    incore_ms=$(steady "$work/$tag-incore-nc.out")
    pooch_ms=$(steady "$work/$tag-pooch.out")
    plan="$(field "$err" "pooch: plan:" keep)/$(field "$err" "pooch: plan:" swap)/$(field "$err" "pooch: plan:" recompute)"
    grep -q '^pooch: plan: .* failed' "$err" && plan="none (failed)"
    predicted=$(field "$err" "pooch: plan:" predicted_iteration_ms)
    measured=$(field "$err" "pooch: iterations:" measured_iteration_ms)
    echo "| $model | $preset | $batch | $peak | $limit | $alone | $incore_ms | $pooch_ms | $(ratio "$pooch_ms" "$incore_ms")x | $plan | ${predicted:--} | ${measured:--} | $(percent_error "$predicted" "${measured:-0}") | $(field "$err" "pooch: opaque:" calls) | $(field "$err" "pooch: opaque:" unclassified) |" >>"$table"
    {
      echo "### $model on $preset (batch $batch, limit $limit bytes)"
      echo '```'
      grep '^pooch: ' "$err" | grep -v '^pooch: calls:'
      echo '```'
    } >>"$details"
  done
done

{
  echo "# pooch under PyTorch on simgpu (virtual time, SIMGPU_COMPUTE=timing)"
  echo
  echo "$ITERS iterations per run; times are medians of the second half. Slowdown: pooch ms /"
  echo "in-core ms. Predicted and measured: pooch's own plan line and iteration average."
  echo
  cat "$table"
  echo
  cat "$details"
} >"$OUT_DIR/torch.md"
cat "$OUT_DIR/torch.md"
