#!/bin/sh
# bench_dynamic.sh [BUILD_DIR]: cnn_train's dynamic networks (issue 16: skipnet, moe, a tiny CNN
# whose image side changes per iteration) under pooch's policies on simgpu, in virtual time.
# A benchmark, not a test: no figure makes it fail; a run that fails or whose params_checksum
# differs from in-core is a table cell (a differing checksum is a bug of pooch, and says so).
#
# The networks decide what runs from values computed on the device, so simgpu computes them
# (math mode): SIMGPU_COMPUTE=timing would read back values nothing wrote and the choices would
# never change. Sizes are therefore small (seconds per run on a 2-core host). Iterations are
# marked with NVTX ranges (cnn_train --nvtx, POOCH_ITERATION_MARKER=nvtx): the automatic detector
# finds no period in skipnet (see issue 16's notes).
#
# For each workload it runs cnn_train alone on a 64 GiB simgpu (in-core: its peak and its times),
# then under `pooch run --policy P` for every P of POLICIES on a device of PERCENT % of that peak,
# and reports the mean virtual ms of the last LAST iterations (ms of cnn_train's iteration lines,
# CUDA events on simgpu's clock) and the slowdown against in-core over the same iterations.
# `pooch` runs with the pilot model (its default, Note [Pilot model] in core/pilot/pilot.h) and
# `pooch-nopilot` with POOCH_PILOT=off; for runs with the pilot the table gives each of its two
# models' accuracy (hits / (hits + misses + wasted)) and mean host time per query, and the
# boundaries at which it acted (it acts only while no plan is followed).
# Not here yet (issue 16): the oracle, the largest batch or expert count per policy, and the
# plot.
#
# Environment (defaults in brackets): PERCENT [40 30], POLICIES [demand dtr pooch-nopilot pooch],
# ITERS [10],
# LAST [4], WORKLOADS [skipnet moe-top2 moe-top8 tiny-vary].
# Output: BUILD_DIR/bench/dynamic.md (printed at the end too) and BUILD_DIR/bench/dynamic-raw/.
set -eu
build=${1:-build}
pooch=$build/bin/pooch
cnn=$build/bin/cnn_train
libdir=$build/lib/simgpu
if ! { [ -x "$pooch" ] && [ -x "$cnn" ] && [ -e "$build/lib/libpooch.so" ] && [ -d "$libdir" ]; }; then
  echo "bench_dynamic: build pooch, cnn_train, pooch_preload and simgpu into $build first" >&2
  exit 2
fi
percents=${PERCENT:-40 30}
policies=${POLICIES:-demand dtr pooch-nopilot pooch}
iters=${ITERS:-10}
last=${LAST:-4}
workloads=${WORKLOADS:-skipnet moe-top2 moe-top8 tiny-vary}
out=$build/bench
raw=$out/dynamic-raw
mkdir -p "$raw"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset SIMGPU_COMPUTE

args_of() {
  case $1 in
    skipnet) echo "--model skipnet --batch 64" ;;
    moe-top2) echo "--model moe --batch 16 --experts 16 --top-k 2" ;;
    moe-top8) echo "--model moe --batch 16 --experts 16 --top-k 8" ;;
    tiny-vary) echo "--model tiny --batch 64 --vary-image 32,44" ;;
    *) echo "bench_dynamic: unknown workload $1" >&2; exit 2 ;;
  esac
}

# mean_ms FILE: the mean ms of the last $last iteration lines.
mean_ms() {
  grep '^iter ' "$1" | tail -n "$last" | awk '{ s += $6; n++ } END { if (n) printf "%.3f", s / n }'
}
checksum() { awk '$1 == "params_checksum" { print $2 }' "$1"; }
# pilot_cell FILE MODEL: "accuracy / query_us" of MODEL (ngram, linear) from the summary's pilot:
# line; acted_cell FILE: its acted_at count. Empty without the line.
pilot_cell() {
  awk -v m="$2" '$2 == "pilot:" { for (i = 1; i < NF; i++) if ($i == m) {
    for (j = i; j < NF; j++) { if ($j == "accuracy") a = $(j + 1); if ($j == "query_us") { q = $(j + 1); break } }
    printf "%s / %s", a, q; exit } }' "$1"
}
acted_cell() { awk '$2 == "pilot:" { for (i = 1; i < NF; i++) if ($i == "acted_at") print $(i + 1) }' "$1"; }

table=$out/dynamic.md
{
  echo "# pooch on dynamic networks (simgpu virtual time, math mode; mean ms of iterations $((iters - last + 1))-$iters of $iters)"
  echo
  echo "| workload | device | in-core ms | policy | ms | slowdown | checksum | pilot ngram accuracy / query us | pilot linear accuracy / query us | pilot acted at |"
  echo "|---|---|---:|---|---:|---:|---|---|---|---:|"
} >"$table"

for w in $workloads; do
  args="$(args_of "$w") --iters $iters --nvtx"
  # shellcheck disable=SC2086
  if ! SIMGPU_MEMORY=64GiB "$cnn" $args >"$raw/$w-incore.out" 2>"$raw/$w-incore.err"; then
    echo "| $w | 64 GiB | fails | | | | | | | |" >>"$table"
    continue
  fi
  peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$raw/$w-incore.out")
  incore=$(mean_ms "$raw/$w-incore.out")
  want=$(checksum "$raw/$w-incore.out")
  for pc in $percents; do
    mem=$((peak * pc / 100))
    for p in $policies; do
      base=$raw/$w-$pc-$p
      # shellcheck disable=SC2086
      policy=${p%-nopilot}
      if [ "$policy" = "$p" ]; then pilot=on; else pilot=off; fi
      if SIMGPU_MEMORY=$mem POOCH_ITERATION_MARKER=nvtx POOCH_PILOT=$pilot \
        "$pooch" run --policy "$policy" -- "$cnn" $args >"$base.out" 2>"$base.err"; then
        ms=$(mean_ms "$base.out")
        slow=$(awk -v a="$ms" -v b="$incore" 'BEGIN { printf "%.2fx", a / b }')
        if [ "$(checksum "$base.out")" = "$want" ]; then same="same"; else same="**differs (bug)**"; fi
      else
        ms="exit $?"
        slow="-"
        same="-"
      fi
      echo "| $w | $pc % ($mem B) | $incore | $p | $ms | $slow | $same | $(pilot_cell "$base.err" ngram) | $(pilot_cell "$base.err" linear) | $(acted_cell "$base.err") |" >>"$table"
    done
  done
done
cat "$table"
