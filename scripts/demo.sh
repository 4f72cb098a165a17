#!/bin/sh
# demo.sh: pooch's main job on a fresh machine — train a ResNet-50 whose feature maps do not fit
# in device memory, under pooch, and compare it with in-core training.
#
# Builds first (scripts/setup.sh, into build/) when BUILD/bin/pooch or BUILD/lib/libpooch.so is
# missing. Then:
#   * with a GPU (`nvidia-smi -L` succeeds): measures the in-core peak of
#     `cnn_train --model resnet50 --batch B --iters 3` (B halves while in-core runs out of memory),
#     then runs `cnn_train ... --iters 10` under `pooch run --policy pooch` with the memory limit
#     set to 40 % of that peak;
#   * without one: on simgpu as a 16 GiB V100 over PCIe gen3 (SIMGPU_PRESET=v100-pcie3
#     SIMGPU_COMPUTE=timing SIMGPU_MEMORY=16GiB, times in simgpu's virtual time), shows that
#     `cnn_train --model resnet50 --batch B` stops with out of memory (exit 3) without pooch,
#     trains it under `pooch run --policy pooch`, and runs it in-core on a 64 GiB simgpu.
# It ends with pooch's summary lines, the trace's path and the in-core comparison (img/s of the
# last two iterations; the first ones are pooch's profiling). Exit status: the pooch run's when it
# fails, 2 when there is no build, else 0.
#
# Environment: BUILD (default build), BATCH (default 640), POOCH_DEMO_FORCE_SIMGPU=1 (use simgpu
# even where a GPU is found). Output in BUILD/demo/: each run's stdout and stderr, trace.json.
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-build}
batch=${BATCH:-640}
pooch=$build/bin/pooch
cnn=$build/bin/cnn_train

have_build() { [ -x "$pooch" ] && [ -e "$build/lib/libpooch.so" ] && [ -x "$cnn" ]; }
if ! have_build; then
  echo "demo: no build in $build: running scripts/setup.sh"
  scripts/setup.sh
  if ! have_build; then
    echo "demo: $build still lacks bin/pooch, bin/cnn_train or lib/libpooch.so (setup builds into build/)" >&2
    exit 2
  fi
fi
out=$build/demo
mkdir -p "$out"
trace=$out/trace.json
rm -f "$trace"

# ms_of FILE: the mean `ms` of the last two `iter` lines of cnn_train's output (empty if none).
ms_of() {
  awk '$1 == "iter" { for (i = 1; i < NF; i++) if ($i == "ms") { n++; ms[n] = $(i + 1) } }
       END { if (n >= 2) printf "%.3f\n", (ms[n - 1] + ms[n]) / 2; else if (n == 1) print ms[1] }' "$1"
}
# peak_of FILE: cnn_train's peak_device_bytes.
peak_of() { awk '$1 == "peak_device_bytes" { print $2 }' "$1"; }

gpu=no
if [ "${POOCH_DEMO_FORCE_SIMGPU:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1 &&
   nvidia-smi -L >/dev/null 2>&1; then
  gpu=yes
fi

if [ $gpu = yes ]; then
  echo "demo: GPU found: $(nvidia-smi -L | head -n 1)"
  while :; do
    echo "demo: in-core: $cnn --model resnet50 --batch $batch --iters 3"
    rc=0
    "$cnn" --model resnet50 --batch "$batch" --iters 3 >"$out/incore.out" 2>"$out/incore.err" || rc=$?
    [ $rc -eq 0 ] && break
    if [ $rc -eq 3 ] && [ "$batch" -gt 32 ]; then
      echo "demo: in-core batch $batch: $(tail -n 1 "$out/incore.err"); halving the batch"
      batch=$((batch / 2))
      continue
    fi
    echo "demo: the in-core run failed (exit $rc):" >&2
    tail -n 5 "$out/incore.err" >&2
    exit $rc
  done
  peak=$(peak_of "$out/incore.out")
  limit=$(awk -v p="$peak" 'BEGIN { printf "%.0f\n", p * 0.4 }')
  echo "demo: in-core peak_device_bytes $peak; pooch's memory limit 40 %: $limit bytes"
  incore_label="in-core (whole GPU, no pooch)"
  pooch_label="under pooch (limit $limit bytes)"
  set -- --memory-limit "$limit"
else
  LD_LIBRARY_PATH=$build/lib/simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  export SIMGPU_PRESET=v100-pcie3 SIMGPU_COMPUTE=timing SIMGPU_MEMORY=16GiB
  echo "demo: no GPU (nvidia-smi -L fails): simgpu as a 16 GiB V100 over PCIe gen3, virtual time"
  echo "demo: without pooch: $cnn --model resnet50 --batch $batch --iters 10"
  rc=0
  "$cnn" --model resnet50 --batch "$batch" --iters 10 >"$out/nopooch.out" 2>"$out/nopooch.err" || rc=$?
  if [ $rc -eq 0 ]; then
    echo "demo: without pooch it fits (exit 0; peak_device_bytes $(peak_of "$out/nopooch.out")): try a larger BATCH"
  else
    echo "demo: without pooch: exit $rc: $(tail -n 1 "$out/nopooch.err")"
  fi
  incore_label="in-core (64 GiB simgpu, no pooch)"
  pooch_label="under pooch (16 GiB simgpu)"
  set --
fi

echo "demo: under pooch: $pooch run --policy pooch ${*:+$* }--trace $trace -- $cnn --model resnet50 --batch $batch --iters 10"
rc=0
"$pooch" run --policy pooch "$@" --trace "$trace" -- \
  "$cnn" --model resnet50 --batch "$batch" --iters 10 >"$out/pooch.out" 2>"$out/pooch.err" || rc=$?
grep '^iter ' "$out/pooch.out" || true
if [ $rc -ne 0 ]; then
  echo "demo: the pooch run failed (exit $rc); its stderr ends:" >&2
  grep -v '^pooch: calls:' "$out/pooch.err" | tail -n 15 >&2
  exit $rc
fi

if [ $gpu = no ]; then
  echo "demo: in-core: SIMGPU_MEMORY=64GiB $cnn --model resnet50 --batch $batch --iters 10"
  rc=0
  SIMGPU_MEMORY=64GiB "$cnn" --model resnet50 --batch "$batch" --iters 10 \
    >"$out/incore.out" 2>"$out/incore.err" || rc=$?
  [ $rc -eq 0 ] || echo "demo: in-core on 64 GiB failed (exit $rc): $(tail -n 1 "$out/incore.err")"
fi

echo
echo "== pooch's summary"
grep '^pooch: ' "$out/pooch.err" | grep -v '^pooch: calls:' || true
echo "trace: $trace"
echo
pms=$(ms_of "$out/pooch.out")
ims=$(ms_of "$out/incore.out")
awk -v b="$batch" -v p="$pms" -v i="$ims" -v il="$incore_label" -v pl="$pooch_label" 'BEGIN {
  if (i != "") printf "%s: %.1f img/s (%.1f ms/iteration)\n", il, b * 1000 / i, i
  else printf "%s: no measurement (the in-core run failed)\n", il
  if (i != "" && p != "")
    printf "%s: %.1f img/s (%.1f ms/iteration): slowdown %+.1f %% (time per iteration; %+.1f %% img/s)\n",
           pl, b * 1000 / p, p, 100 * (p / i - 1), 100 * (i / p - 1)
  else if (p != "") printf "%s: %.1f img/s (%.1f ms/iteration)\n", pl, b * 1000 / p, p
}'
