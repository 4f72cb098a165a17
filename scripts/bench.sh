#!/bin/sh
# bench.sh [BUILD_DIR]: throughput of cnn_train's networks (ResNet-50, a U-Net, a DenseNet) under
# every pooch policy on simgpu, in simgpu's virtual time (SIMGPU_COMPUTE=timing). In-core and
# demand runs give the same figures on every run; so do runs under a carried-out plan
# (docs/measurements.md, "Benchmarks").
# A benchmark, not a test: a run that fails (exit 3, out of memory) is a table cell, never a
# failure of the script, and no figure (however slow) makes it fail.
#
# For each machine preset (SIMGPU_PRESET, 16 GiB device), model and batch it runs
#   BUILD_DIR/bin/pooch run --policy P -- BUILD_DIR/bin/cnn_train --model M [--image S] --batch B --iters 10
# for every policy P, and the in-core reference without pooch on a 64 GiB simgpu. A run's time is
# the mean of the `ms` of its last two iterations (the first ones are profiling); the plan counts
# and the predicted time come from pooch's summary lines on stderr, the in-core peak (how many
# times the device the batch needs) from cnn_train's peak_device_bytes.
#
# Arguments: BUILD_DIR (default build), holding bin/pooch, bin/cnn_train, lib/libpooch.so and
# lib/simgpu/. Environment (defaults in brackets):
#   MODELS    [resnet50 unet@256:320,536 densenet@128:248,408 unet@256%40:16
#             unet@512+conv-bias+width=32%60:16 unet@512+conv-bias+width=32%40:16]
#             space-separated entries NAME[@IMAGE][+OPT[=V]]...[%PERCENT][:B1,B2,...]: a cnn_train
#             --model, its --image (left out: cnn_train's default for the model), further cnn_train
#             options (+conv-bias is --conv-bias, +width=32 is --width 32), the device's size as
#             PERCENT % of the batch's in-core peak_device_bytes instead of MEMORY (for a network's
#             own oversubscription: %40 is 2.5x), and its batches (left out: BATCHES).
#             The defaults for unet (256x256) and densenet (128x128) are the batches whose in-core
#             peak is about 1.5x and 2.5x of 16 GiB (unet 320: 25.7 GB, 1.49x; 536: 43.0 GB,
#             2.50x; densenet 248: 26.0 GB, 1.51x; 408: 42.7 GB, 2.49x). The last three are
#             issue 37's memory-bound U-Nets at their own oversubscription: unet at batch 16 at
#             2.5x, and the 512x512 U-Net of width 32 with every convolution's bias added in
#             place at 60 % and 40 % of its peak (1.67x and 2.5x).
#             E.g. MODELS=resnet50:640 for ResNet-50 at batch 640 alone.
#   BATCHES   [256 384 512 640]   batches of a MODELS entry that names none (resnet50 by default)
#   POLICIES  [demand swap-all-nosched swap-all swap-opt pooch superneurons checkpoint]
#   MACHINES  [v100-pcie3 v100-nvlink2]     SIMGPU_PRESET values
#   MEMORY [16GiB], INCORE_MEMORY [64GiB], ITERS [10: two profiled, re-plans settle by the 8th]
#   INCORE_FALLBACK_MEMORY [128GiB]   where in-core runs out of memory on INCORE_MEMORY (exit 3;
#             the table says so), it runs again on this size and the slowdown is against that run
#             (simgpu's timing mode touches no pages, so the size costs nothing); none: no retry
# Output in BUILD_DIR/bench/: bench.md (a table per machine and model; printed at the end too),
# bench.png (img/s against batch per policy, one panel per model and machine; needs gnuplot),
# results.tsv (one line per run, the model, as its MODELS label, in its first column) and raw/
# (each run's stdout and stderr, as MACHINE-MODEL[-iIMAGE][-OPT[V]]...[-pPERCENT]-bBATCH-POLICY.out/.err).
# The defaults take about 9 minutes on a 2-core host (176 runs; MODELS="resnet50:640
# unet@256:320,536 densenet@128:248,408" POLICIES="demand pooch swap-opt" MACHINES=v100-pcie3:
# 80 s; the three issue 37 entries, every policy, one machine: 42 s).
set -eu
build=${1:-build}
pooch=$build/bin/pooch
cnn=$build/bin/cnn_train
libdir=$build/lib/simgpu
if ! { [ -x "$pooch" ] && [ -x "$cnn" ] && [ -e "$build/lib/libpooch.so" ] && [ -d "$libdir" ]; }; then
  echo "bench: build pooch, cnn_train, pooch_preload and simgpu into $build first" >&2
  exit 2
fi
models=${MODELS:-resnet50 unet@256:320,536 densenet@128:248,408 unet@256%40:16 unet@512+conv-bias+width=32%60:16 unet@512+conv-bias+width=32%40:16}
batches=${BATCHES:-256 384 512 640}
policies=${POLICIES:-demand swap-all-nosched swap-all swap-opt pooch superneurons checkpoint}
machines=${MACHINES:-v100-pcie3 v100-nvlink2}
memory=${MEMORY:-16GiB}
incore_memory=${INCORE_MEMORY:-64GiB}
fallback_memory=${INCORE_FALLBACK_MEMORY:-128GiB}
iters=${ITERS:-10}

# split_label LABEL: from a MODELS entry's label (all before its ':'), sets name, image, opts
# (its +OPT[=V] parts, '+'-separated), pct (its PERCENT, or empty), args (cnn_train's options but
# --batch and --iters, as words: each was checked to be one word) and tag (the label in file names).
split_label() {
  rest=$1
  pct=; case "$rest" in *%*) pct=${rest##*%}; rest=${rest%\%*} ;; esac
  opts=; case "$rest" in *+*) opts=${rest#*+}; rest=${rest%%+*} ;; esac
  name=${rest%%@*}
  image=; [ "$name" = "$rest" ] || image=${rest#*@}
  args="--model $name"; tag=$name
  [ -z "$image" ] || { args="$args --image $image"; tag="$tag-i$image"; }
  for o in $(echo "$opts" | tr '+' ' '); do
    opt=${o%%=*}
    if [ "$opt" = "$o" ]; then
      args="$args --$opt"; tag="$tag-$opt"
    else
      args="$args --$opt ${o#*=}"; tag="$tag-$opt${o#*=}"
    fi
  done
  [ -z "$pct" ] || tag="$tag-p$pct"
}

# The MODELS entries, checked, as "LABEL:B1,B2,..." words (LABEL is all before the entry's ':').
modelspec=
for entry in $models; do
  spec=${entry%%:*}
  if [ "$spec" = "$entry" ]; then bl=$(echo $batches | tr ' ' ','); else bl=${entry#*:}; fi
  split_label "$spec"
  case "$name" in ''|*[!a-z0-9]*) echo "bench: bad MODELS entry '$entry' (NAME[@IMAGE][+OPT[=V]]...[%PERCENT][:B1,B2,...])" >&2; exit 2 ;; esac
  case "$image" in *[!0-9]*) echo "bench: bad image size in MODELS entry '$entry'" >&2; exit 2 ;; esac
  case "$spec" in *%*) case "$pct" in ''|0*|*[!0-9]*) echo "bench: bad percentage in MODELS entry '$entry'" >&2; exit 2 ;; esac ;; esac
  case "$spec" in *+*) case "+$opts+" in *++*|*[!a-z0-9.=+-]*) echo "bench: bad option in MODELS entry '$entry'" >&2; exit 2 ;; esac ;; esac
  for o in $(echo "$opts" | tr '+' ' '); do
    case "$o" in -*|=*|*=|*=*=*) echo "bench: bad option '$o' in MODELS entry '$entry'" >&2; exit 2 ;; esac
  done
  case "$bl" in ''|,*|*,|*,,*|*[!0-9,]*) echo "bench: bad batch list in MODELS entry '$entry'" >&2; exit 2 ;; esac
  modelspec="$modelspec${modelspec:+ }$spec:$bl"
done

# The device's size in bytes (for "needs N x the device").
device_bytes=$(echo "$memory" | awk '{
  n = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u)
  f = u == "GiB" ? 2^30 : u == "MiB" ? 2^20 : u == "KiB" ? 2^10 : u == "GB" ? 1e9 : u == "MB" ? 1e6 : u == "" ? 1 : 0
  printf "%.0f\n", n * f }')

out=$build/bench
raw=$out/raw
mkdir -p "$raw"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export SIMGPU_COMPUTE=timing
# The summary's detailed lines, which this script reads, are printed at POOCH_LOG=info.
export POOCH_LOG=info
unset POOCH_POLICY POOCH_MEMORY_LIMIT POOCH_TRACE POOCH_SUMMARY 2>/dev/null || true

results=$out/results.tsv
notes=$out/stderr-notes.md
printf 'model\tmachine\tbatch\tpolicy\texit\tms\tpredicted_ms\tfeasible\tkeep\tswap\trecompute\tsafety_net_in\tdemand_in\tplan_status\tpeak_device_bytes\tdevice_bytes\n' >"$results"
: >"$notes"

# parse MODEL MACHINE BATCH POLICY RC STDOUT STDERR DEVICE_BYTES: appends one line to results.tsv.
parse() {
  awk -v model="$1" -v m="$2" -v b="$3" -v p="$4" -v rc="$5" -v out="$6" -v dev="$8" '
    function val(key,   i) { for (i = 1; i < NF; i++) if ($i == key) return $(i + 1); return "-" }
    FILENAME == out && $1 == "iter" { n++; ms[n] = val("ms") }
    FILENAME == out && $1 == "peak_device_bytes" { peak = $2 }
    FILENAME != out && /^pooch: plan: / {
      st = ""
      pred = val("predicted_iteration_ms"); feas = val("feasible")
      keep = val("keep"); swap = val("swap"); rec = val("recompute")
      if ($0 ~ /^pooch: plan: policy [^ ]+ failed/) st = "failed"
      else {
        st = $0; while ((i = index(st, ";")) > 0) st = substr(st, i + 1)
        sub(/^ +/, "", st); if (st == $0 || st == "") st = "-"
      }
    }
    FILENAME != out && /^pooch: plan_run: / { safety = val("safety_net_swap_ins") }
    FILENAME != out && /^pooch: swaps: / { dem = val("demand_in") }
    END {
      t = (rc == 0 && n >= 2) ? sprintf("%.3f", (ms[n - 1] + ms[n]) / 2) : "-"
      if (st == "") { pred = feas = keep = swap = rec = st = "-" }
      if (safety == "") safety = "-"
      if (dem == "") dem = "-"
      if (peak == "") peak = "-"
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
             model, m, b, p, rc, t, pred, feas, keep, swap, rec, safety, dem, st, peak, dev
    }' "$6" "$7" >>"$results"
}

# Lines of a run's output that are neither iteration output nor pooch's usual summary lines.
unusual() {
  grep -E '^pooch: plan: policy [^ ]+ failed' "$2" || true
  cat "$1" "$2" | grep -Ev '^(iter |peak_device_bytes |params_checksum |timing mode \(SIMGPU_COMPUTE=timing\) computes no loss|pooch: (summary|memory|swaps|reuse|host|host_steady|iterations|plan|plan_run|plan_cache|pilot|choice|recompute|small|opaque|calls): )' |
    grep -Ev '^pooch: (loaded, policy |managing device memory: |iteration found: |profiling the next iteration |profiled: |planned: |carrying out the plan: |limit [0-9]|moved |plan of policy |nothing went wrong$)' || true
}

start=$(date +%s)
for m in $machines; do
  for entry in $modelspec; do
    label=${entry%%:*}
    split_label "$label"
    # shellcheck disable=SC2086 # args is words, each checked above
    set -- $args
    for b in $(echo "${entry#*:}" | tr ',' ' '); do
      incore_peak=
      for p in in-core in-core-big $policies; do
        base=$raw/$m-$tag-b$b-$p
        rc=0
        # The device of a policy's run: MEMORY, or PERCENT % of the in-core run's peak.
        dev=$memory; dev_bytes=$device_bytes
        if [ -n "$pct" ]; then
          dev=; dev_bytes=-
          [ -z "$incore_peak" ] || { dev=$((incore_peak * pct / 100)); dev_bytes=$dev; }
        fi
        if [ "$p" != in-core ] && [ "$p" != in-core-big ] && [ -z "$dev" ]; then
          printf -- '- %s %s batch %s %s: not run (no in-core peak to take %s %% of)\n' \
            "$m" "$label" "$b" "$p" "$pct" >>"$notes"
          continue
        fi
        if [ "$p" = in-core-big ]; then
          # Only where in-core ran out of memory on $incore_memory.
          [ "$fallback_memory" != none ] && [ "$incore_rc" -eq 3 ] || continue
          env SIMGPU_PRESET="$m" SIMGPU_MEMORY="$fallback_memory" \
            "$cnn" "$@" --batch "$b" --iters "$iters" >"$base.out" 2>"$base.err" || rc=$?
        elif [ "$p" = in-core ]; then
          env SIMGPU_PRESET="$m" SIMGPU_MEMORY="$incore_memory" \
            "$cnn" "$@" --batch "$b" --iters "$iters" >"$base.out" 2>"$base.err" || rc=$?
        else
          env SIMGPU_PRESET="$m" SIMGPU_MEMORY="$dev" "$pooch" run --policy "$p" -- \
            "$cnn" "$@" --batch "$b" --iters "$iters" >"$base.out" 2>"$base.err" || rc=$?
        fi
        [ "$p" = in-core ] && incore_rc=$rc
        if [ "$p" = in-core ] || [ "$p" = in-core-big ]; then
          [ "$rc" -ne 0 ] || incore_peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$base.out")
          dev_bytes=-
        fi
        parse "$label" "$m" "$b" "$p" "$rc" "$base.out" "$base.err" "$dev_bytes"
        odd=$(unusual "$base.out" "$base.err" | head -n 3)
        if [ -n "$odd" ]; then
          printf -- '- %s %s batch %s %s (exit %s):\n' "$m" "$label" "$b" "$p" "$rc" >>"$notes"
          printf '%s\n' "$odd" | sed 's/^/  `/; s/$/`/' >>"$notes"
        fi
        tail -n 1 "$results" | awk -F '\t' '{ printf "bench: %s %s batch %s %-16s exit %s ms %s\n", $2, $1, $3, $4, $5, $6 }' >&2
      done
    done
  done
done
echo "bench: $(($(date +%s) - start)) s of runs" >&2

# The report.
awk -F '\t' -v machines="$machines" -v modelspec="$modelspec" -v policies="$policies" \
    -v memory="$memory" -v incore_memory="$incore_memory" -v fallback_memory="$fallback_memory" \
    -v iters="$iters" -v device_bytes="$device_bytes" '
  NR == 1 { next }
  {
    k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    rc[k] = $5; ms[k] = $6; pred[k] = $7; feas[k] = $8; keep[k] = $9; swp[k] = $10
    rec[k] = $11; safety[k] = $12; dem[k] = $13; st[k] = $14; peak[k] = $15; dev[k] = $16
  }
  function ok(k) { return (k in rc) && rc[k] == 0 && ms[k] != "-" }
  function cell(k) { return rc[k] == 3 ? "OOM" : (rc[k] != 0 ? "fail" : ms[k]) }
  # ref(md, m, b): the key of the in-core run to compare with ("" if none ran).
  function ref(md, m, b,   k) {
    k = md SUBSEP m SUBSEP b SUBSEP "in-core"; if (ok(k)) return k
    k = md SUBSEP m SUBSEP b SUBSEP "in-core-big"; if (ok(k)) return k
    return ""
  }
  function vs(k, r) {
    if (!ok(k)) return "-"
    if (r == "") return "n/a (in-core OOM)"
    return sprintf("%+.1f %%", 100 * (ms[k] / ms[r] - 1)) (r ~ /in-core-big$/ ? " (vs " fallback_memory ")" : "")
  }
  function err(k) { return (ok(k) && pred[k] != "-") ? sprintf("%+.1f %%", 100 * (pred[k] - ms[k]) / ms[k]) : "-" }
  # cmd(md): the cnn_train flags of model label md (NAME[@IMAGE][+OPT[=V]]...[%PERCENT]).
  function cmd(md,   i, n, part, s, j) {
    if ((i = index(md, "%"))) md = substr(md, 1, i - 1)
    n = split(md, part, "+")
    i = index(part[1], "@")
    s = i ? "--model " substr(part[1], 1, i - 1) " --image " substr(part[1], i + 1) : "--model " part[1]
    for (j = 2; j <= n; j++) {
      i = index(part[j], "=")
      s = s " --" (i ? substr(part[j], 1, i - 1) " " substr(part[j], i + 1) : part[j])
    }
    return s
  }
  # devname(md): the device of the policy runs of model label md, in words.
  function devname(md,   i) {
    i = index(md, "%")
    return i ? substr(md, i + 1) " % of the in-core peak" : memory
  }
  # devof(md, m, b): the device bytes of the policy runs of that batch ("-" if none ran).
  function devof(md, m, b,   q, k) {
    for (q = 1; q <= np; q++) {
      k = md SUBSEP m SUBSEP b SUBSEP P[q]
      if ((k in dev) && dev[k] != "-") return dev[k]
    }
    return "-"
  }
  END {
    nm = split(machines, M, " "); nd = split(modelspec, D, " "); np = split(policies, P, " ")
    for (d = 1; d <= nd; d++) { i = index(D[d], ":"); MB[d] = substr(D[d], i + 1); D[d] = substr(D[d], 1, i - 1) }
    names = ""; for (d = 1; d <= nd; d++) names = names (d > 1 ? ", " : "") D[d]
    printf "# pooch benchmark: cnn_train (%s), simgpu virtual time\n\n", names
    printf "Each run: `pooch run --policy P -- cnn_train --model M [--image S] --batch B --iters %s` on " \
           "`SIMGPU_COMPUTE=timing SIMGPU_MEMORY=%s` (or a share of the in-core peak, where the " \
           "table says so); ms/iter is the mean of the last two " \
           "iterations. In-core: cnn_train without pooch on a %s simgpu (OOM there: exit 3; then " \
           "again on %s, and the slowdown is against that run); its peak_device_bytes over %s (or that share) is " \
           "what the batch needs of the device. " \
           "Slowdown is measured ms against in-core ms; error is (predicted - measured) / measured. " \
           "Plan: what the plan line says after its figures (carried out, or failed: no plan, " \
           "the run went on under demand swapping). " \
           "Counts are keep/swap/recompute over the candidate intervals, from the plan line; safety-net and " \
           "demand swap-ins come from the plan_run and swaps lines. In-core and demand runs repeat " \
           "exactly; so did runs under a carried-out plan, in the runs compared.\n", iters, memory, incore_memory, fallback_memory, memory
    for (i = 1; i <= nm; i++) {
      m = M[i]
      for (d = 1; d <= nd; d++) {
        md = D[d]; nb = split(MB[d], B, ",")
        printf "\n## %s (%s): %s\n\n", m, devname(md), cmd(md)
        printf "| batch | needs | policy | exit | ms/iter | img/s | slowdown vs in-core | plan | predicted ms | error | keep | swap | recompute | safety-net swap-ins | demand swap-ins |\n"
        printf "|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
        for (j = 1; j <= nb; j++) {
          b = B[j]; r = ref(md, m, b)
          db = devof(md, m, b)
          need = (r != "" && peak[r] != "-" && db != "-" && db > 0) ? sprintf("%.2fx", peak[r] / db) : "-"
          for (q = -1; q <= np; q++) {
            p = q == -1 ? "in-core" : (q == 0 ? "in-core-big" : P[q]); k = md SUBSEP m SUBSEP b SUBSEP p
            if (!(k in rc)) continue
            name = q == -1 ? "in-core (" incore_memory ", no pooch)" : (q == 0 ? "in-core (" fallback_memory ", no pooch)" : p)
            ips = ok(k) ? sprintf("%.1f", b * 1000 / ms[k]) : "-"
            if (q <= 0) slow = ok(k) ? "—" : "in-core OOM"
            else slow = vs(k, r)
            pr = pred[k]; if (pr != "-" && feas[k] != "yes") pr = pr " (feasible " feas[k] ")"
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", b, need, name, rc[k],
                   cell(k), ips, slow, st[k], pr, err(k), keep[k], swp[k], rec[k], safety[k], q <= 0 ? "-" : dem[k]
          }
        }
        printf "\n"
        for (j = 1; j <= nb; j++) {
          b = B[j]; r = ref(md, m, b); pre = md SUBSEP m SUBSEP b SUBSEP
          kp = pre "pooch"; ks = pre "superneurons"; kd = pre "demand"
          if (ok(kp)) {
            s = sprintf("- batch %s: pooch %s ms, %s vs in-core, predicted %s ms (error %s), plan %s, keep/swap/recompute %s/%s/%s",
                        b, ms[kp], vs(kp, r), pred[kp], err(kp), st[kp], keep[kp], swp[kp], rec[kp])
            if (ok(kd)) s = s sprintf("; demand %s ms: pooch %.2fx as fast", ms[kd], ms[kd] / ms[kp])
            else if (kd in rc) s = s sprintf("; demand %s", cell(kd))
            printf "%s\n", s
          } else if (kp in rc)
            printf "- batch %s: pooch %s (exit %s)\n", b, cell(kp), rc[kp]
          if (ok(kp) && ok(ks))
            printf "- batch %s: pooch %.1f img/s (plan %s), superneurons %.1f img/s (plan %s): pooch is %.2fx as fast\n",
                   b, b * 1000 / ms[kp], st[kp], b * 1000 / ms[ks], st[ks], ms[ks] / ms[kp]
          else if ((kp in rc) && (ks in rc))
            printf "- batch %s: pooch %s, superneurons %s: no ratio\n", b, cell(kp), cell(ks)
        }
      }
    }
    for (d = 1; d <= nd; d++) {
      md = D[d]; nb = split(MB[d], B, ","); b = B[nb]; line = ""
      for (i = 1; i <= nm; i++) {
        m = M[i]; k = md SUBSEP m SUBSEP b SUBSEP "pooch"; r = ref(md, m, b)
        if (!(k in rc)) continue
        if (ok(k))
          s = sprintf("%s %.1f ms (%.1f img/s), slowdown %s vs in-core, plan %s, recompute %s", m, ms[k],
                      b * 1000 / ms[k], vs(k, r), st[k], rec[k])
        else
          s = sprintf("%s %s", m, cell(k))
        line = line (line == "" ? "" : "; ") s
      }
      if (line != "") printf "\n**pooch on %s at batch %s across machines:** %s\n", md, b, line
    }
  }' "$results" >"$out/bench.md"
if [ -s "$notes" ]; then
  { printf '\n## Other output on stderr/stdout (first 3 lines per run)\n\n'; cat "$notes"; } >>"$out/bench.md"
fi

# The plot: img/s against batch, one line per policy, one panel per model (rows) and machine
# (columns).
if command -v gnuplot >/dev/null 2>&1; then
  nm=$(echo $machines | wc -w)
  nd=$(echo $modelspec | wc -w)
  for m in $machines; do
    for entry in $modelspec; do
      label=${entry%%:*}
      split_label "$label"
      awk -F '\t' -v md="$label" -v m="$m" -v batches="${entry#*:}" -v policies="in-core $policies" '
        NR > 1 && $1 == md && $2 == m {
          p = $4   # in-core-big ran only where in-core ran out of memory: it stands for in-core
          if (p == "in-core-big") { if ($5 != 0) next; p = "in-core" }
          v[$3, p] = ($5 == 0 && $6 != "-") ? $3 * 1000 / $6 : "?"
        }
        END {
          nb = split(batches, B, ","); np = split(policies, P, " ")
          printf "batch"; for (q = 1; q <= np; q++) printf " %s", P[q]; printf "\n"
          for (j = 1; j <= nb; j++) {
            printf "%s", B[j]
            for (q = 1; q <= np; q++) printf " %s", ((B[j], P[q]) in v) ? v[B[j], P[q]] : "?"
            printf "\n"
          }
        }' "$results" >"$out/plot-$m-$tag.dat"
    done
  done
  term=png
  gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo && term=pngcairo
  {
    printf 'set terminal %s size %d,%d\n' "$term" $((620 * nm)) $((600 * nd))
    printf 'set output "%s"\n' "$out/bench.png"
    printf 'set datafile missing "?"\nset key autotitle columnhead below maxrows 3\nset grid\n'
    printf 'set xlabel "batch"\nset ylabel "img/s (virtual time)"\nset yrange [0:*]\n'
    if [ "$fallback_memory" = none ]; then
      printf 'set label 1 "in-core: %s simgpu" at graph 0.02, graph 0.97\n' "$incore_memory"
    else
      printf 'set label 1 "in-core: %s simgpu (%s where that runs out)" at graph 0.02, graph 0.97\n' \
        "$incore_memory" "$fallback_memory"
    fi
    printf 'set offsets graph 0.04, graph 0.04, graph 0.12, 0\n'
    printf 'set multiplot layout %d,%d\n' "$nd" "$nm"
    for entry in $modelspec; do
      label=${entry%%:*}
      split_label "$label"
      printf 'set xtics (%s)\n' "$(echo "${entry#*:}" | sed 's/,/, /g')"
      for m in $machines; do
        printf 'set title "%s%s%s on %s, %s"\n' "$name" "${image:+ (${image}x$image)}" \
          "${opts:+ +$opts}" "$m" "${pct:+$pct % of in-core}${pct:-$memory}"
        printf 'plot for [i=2:%d] "%s" using 1:i with linespoints\n' \
          $(($(echo in-core $policies | wc -w) + 1)) "$out/plot-$m-$tag.dat"
      done
    done
    printf 'unset multiplot\n'
  } >"$out/bench.gp"
  gnuplot "$out/bench.gp"
  echo "bench: plot in $out/bench.png" >&2
else
  echo "bench: gnuplot not found (scripts/setup.sh installs gnuplot-nox): no plot" >&2
fi
cat "$out/bench.md"
