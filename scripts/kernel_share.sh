#!/usr/bin/env bash
# The kernels bench_torch.sh's models launch, and what pooch's analysis knows of them (issue 36,
# point 2): a measurement, not a test (it fails only when a run it needs fails).
#
#   scripts/kernel_share.sh                       # build/, build/torch-venv, build/cuda-tools
#   MODELS=transformer ITERS=4 PRESET=v100-pcie3 scripts/kernel_share.sh
#
# For each model of tests/gpu/torch_train.py (MODELS, default resnet50 transformer; BATCH, default
# 2), on simgpu in timing mode (PRESET, default h100-pcie5; a v100 preset gets
# POOCH_KERNEL_ARCH=sm_90, since CUDA 13's tools cannot read sm_70), under `pooch run` with the
# default policy and no memory limit (POOCH_POLICY=off passes calls through and looks no verdict up):
#   1. first run: ITERS iterations (default 3) with an empty POOCH_KERNEL_CACHE and SIMGPU_TRACE;
#      its wall time on this CPU, and the analysis' own time (the `kernel analysis:` lines);
#   2. cached run: the same again, every verdict from the cache;
#   3. the same with POOCH_KERNEL_ANALYSIS=off: what the process costs without the analysis;
#   4. one iteration, cached, traced: its kernels are subtracted from run 1's, so that the shares
#      (scripts/kernel_share.py) are those of the training iterations, set-up left out.
# Writes build/bench/kernel_share.md (and a .json per model) and prints it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
VENV=${POOCH_TORCH_VENV:-$ROOT/build/torch-venv}
MODELS=${MODELS:-resnet50 transformer}
BATCH=${BATCH:-2}
ITERS=${ITERS:-3}
PRESET=${PRESET:-h100-pcie5}
OUT_DIR=${OUT_DIR:-$ROOT/build/bench}
SIMGPU_RUN=$BUILD_DIR/bin/simgpu-run
POOCH=$BUILD_DIR/bin/pooch
PYTHON=$VENV/bin/python
SCRIPT=$ROOT/tests/gpu/torch_train.py

for f in "$SIMGPU_RUN" "$POOCH" "$PYTHON"; do
  [[ -x $f ]] || { echo "kernel_share: $f is missing" >&2; exit 1; }
done
mkdir -p "$OUT_DIR"
work=$(mktemp -d "${TMPDIR:-/tmp}/kernel_share.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(env | sed -n 's/^\(SIMGPU_[A-Z_]*\|POOCH_[A-Z_]*\|PYTORCH_[A-Z_]*\)=.*/\1/p'); do
  [[ $v == POOCH_TORCH_VENV ]] || unset "$v"
done
export SIMGPU_COMPUTE=timing SIMGPU_PRESET=$PRESET POOCH_LOG=info
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
[[ $PRESET == v100* ]] && export POOCH_KERNEL_ARCH=sm_90

# run TAG ITERS [ENV...]: one model run under pooch; its wall seconds in $work/TAG.wall.
run() {
  local tag=$1 iters=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  if ! env "$@" "$SIMGPU_RUN" "$POOCH" run -- "$PYTHON" -W ignore "$SCRIPT" \
    "$model" incore "$BATCH" "$iters" >"$work/$tag.out" 2>"$work/$tag.err"; then
    echo "kernel_share: $tag failed; its last lines:" >&2
    tail -5 "$work/$tag.err" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' >"$work/$tag.wall"
}
# analysis_s TAG: seconds the `kernel analysis:` lines of TAG's log report (extraction and
# per-kernel analysis), and how many kernels were analysed.
analysis_s() {
  awk '/kernel analysis: .* in [0-9.]+ s$/ { t += $(NF - 1); if ($0 !~ /cubins extracted/) n++ }
       END { printf "%.1f s for %d kernels\n", t, n }' "$work/$1.err"
}

report=$OUT_DIR/kernel_share.md
{
  echo "# Kernel analysis over bench_torch's models"
  echo
  echo "simgpu $PRESET, timing mode, batch $BATCH, $ITERS iterations; shares over the launches"
  echo "of iterations 2..$ITERS (run with $ITERS iterations minus a run with 1); wall times on"
  echo "this CPU ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the start)."
} >"$report"
for model in $MODELS; do
  cache=$work/$model-cache
  echo "== $model: first run" >&2
  run "$model-first" "$ITERS" POOCH_KERNEL_CACHE="$cache" SIMGPU_TRACE="$work/$model.trace.json"
  echo "== $model: cached run" >&2
  run "$model-cached" "$ITERS" POOCH_KERNEL_CACHE="$cache"
  echo "== $model: analysis off" >&2
  run "$model-off" "$ITERS" POOCH_KERNEL_ANALYSIS=off
  echo "== $model: one iteration" >&2
  run "$model-base" 1 POOCH_KERNEL_CACHE="$cache" SIMGPU_TRACE="$work/$model.base.json"
  {
    echo
    echo "## $model"
    echo
    echo '```'
    "$PYTHON" "$ROOT/scripts/kernel_share.py" "$cache" "$work/$model.trace.json" \
      "$work/$model.base.json" --json "$OUT_DIR/kernel_share_$model.json"
    echo "whole run ($ITERS iterations and set-up):"
    "$PYTHON" "$ROOT/scripts/kernel_share.py" "$cache" "$work/$model.trace.json" | sed 's/^/  /'
    echo "wall: first run $(cat "$work/$model-first.wall") s (analysis $(analysis_s "$model-first")),"
    echo "  cached $(cat "$work/$model-cached.wall") s (analysis $(analysis_s "$model-cached")),"
    echo "  analysis off $(cat "$work/$model-off.wall") s"
    echo '```'
  } >>"$report"
done
cat "$report"
