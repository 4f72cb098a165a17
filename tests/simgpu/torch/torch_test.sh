#!/bin/sh
# Unmodified PyTorch on simgpu in timing mode (issue 14), registered by ../CMakeLists.txt:
#   torch_test.sh CASE SIMGPU_RUN PYTHON [CNN_TRAIN]
# CASE: resnet50 (a training loop at batch 64, and its virtual img/s within 2x of cnn_train's
# ResNet-50 on the same preset), resnet50_oom (batch 640 on a 16 GiB V100 raises
# torch.cuda.OutOfMemoryError), transformer (TransformerEncoder + AdamW + SDPA, 5 iterations),
# free (a tensor freed with ctypes' cudaFree fails the next kernel with an illegal address),
# pooch_libs (conv + batch norm + linear under pooch, issue 15: its cuDNN backend convolutions,
# batch norm Ex, cuBLAS GEMMs and cuBLASLt matmuls are modelled calls; at a limit that forces
# swaps and recomputation: no simgpu or pooch error, the plan carried out, backend convolutions
# replayed; about 7 s; its cublasGemmEx calls are all in backward, so none is recomputed), pooch_gemm
# (a stack of bias-free Linear layers under pooch: a layer's output rebuilt by replaying its
# cublasGemmEx, Note [GEMM replay]; about 5 s), pooch_resnet (../../gpu/torch_train.py's
# deterministic torchvision ResNet-50 at batch 16 under pooch at 650 MiB, 42 % of its in-core
# peak of 1 635 181 056 bytes, with the default automatic iteration marker: the iteration is
# found although the loop carries tensors across it (Note [Carried window phase]), a plan is
# carried out, and convolutions are recomputed by replay with no recipe forgotten, although
# PyTorch's ReLU and residual additions between them are kernels (Note [Kernel writes]);
# about 5 s), pooch_repeat (issue 40: transformer_loop.py under pooch twice gives the same plan
# line, the same profile shape, no safety-net swap-in in the last iteration, and last iteration
# times within 1 %; about 60 s), ddp_ranks (issue 39: two ranks under torchrun, each its own
# pooch; the case's comment says what it checks; 50-75 s on two cores at load 12-16).
# PYTHON is the venv scripts/setup-torch.sh made; a missing one fails the case, it is not
# skipped. Exit 0 on success; otherwise prints what failed and exits 1.
set -u
case_name=$1
simgpu_run=$2
python=$3
cnn_train=${4:-}
here=$(dirname "$0")
work=$(mktemp -d "${TMPDIR:-/tmp}/torch_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
libdir=$(dirname "$simgpu_run")/../lib/simgpu
. "$here/../../case_helpers.sh"

[ -x "$python" ] || fail "no PyTorch venv at $python (run scripts/setup-torch.sh)"
for v in $(env | sed -n 's/^\(SIMGPU_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
SIMGPU_COMPUTE=timing
SIMGPU_PRESET=v100-pcie3
SIMGPU_HAZARDS=error
export SIMGPU_COMPUTE SIMGPU_PRESET SIMGPU_HAZARDS

# last_value FILE KEY: the value after KEY on the last line that starts with it.
last_value() { awk -v k="$2" '$1 == k { v = $2 } END { print v }' "$1"; }

# pooch_run LIMIT SCRIPT ARGS...: SCRIPT under `pooch run --memory-limit LIMIT` with a trace;
# fails unless it exits 0 with no simgpu or pooch error and a plan carried out.
pooch_run() {
  limit=$1
  shift
  pooch=$(dirname "$simgpu_run")/pooch
  [ -x "$pooch" ] || fail "no pooch at $pooch"
  # --log info: the checks read the summary's detailed lines (Note [Summary in words]).
  run torch "$simgpu_run" "$pooch" run --memory-limit "$limit" --trace "$work/trace.json" \
    --log info -- \
    "$python" -W ignore "$@"
  [ "$rc" -eq 0 ] || fail "torch under pooch: exit $rc: $(grep -m1 'simgpu:\|pooch: error\|Error' "$work/torch.err")"
  ! grep -q '^simgpu:' "$work/torch.err" || fail "$(grep -m1 '^simgpu:' "$work/torch.err")"
  ! grep -q '^pooch: error' "$work/torch.err" || fail "$(grep -m1 '^pooch: error' "$work/torch.err")"
  grep -q '^pooch: plan: .*carried out' "$work/torch.err" ||
    fail "no plan carried out: $(grep '^pooch: plan:' "$work/torch.err")"
}
# replayed CALL: the run's recompute line shows replays and no failure, and the trace names CALL.
replayed() {
  grep -q '^pooch: recompute: .* replays [1-9][0-9]* .* failures 0 ' "$work/torch.err" ||
    fail "no replay, or a failed one: $(grep '^pooch: recompute:' "$work/torch.err")"
  grep -q "\"call\": *\"$1\"" "$work/trace.json" || fail "the trace shows no replay of $1"
}

case $case_name in
resnet50)
  run torch "$simgpu_run" "$python" "$here/resnet50_loop.py" 64 5
  [ "$rc" -eq 0 ] || fail "torch: exit $rc"
  torch_ips=$(last_value "$work/torch.out" img_per_s)
  [ -n "$torch_ips" ] || fail "torch: no img_per_s"
  [ -x "$cnn_train" ] || fail "no cnn_train at $cnn_train"
  run cnn "$simgpu_run" "$cnn_train" --model resnet50 --batch 64 --iters 5
  [ "$rc" -eq 0 ] || fail "cnn_train: exit $rc"
  cnn_ips=$(awk '$1 == "iter" { for (i = 1; i < NF; i++) if ($i == "img_per_s") v = $(i + 1) } END { print v }' "$work/cnn.out")
  [ -n "$cnn_ips" ] || fail "cnn_train: no img_per_s"
  awk -v a="$torch_ips" -v b="$cnn_ips" 'BEGIN { exit !(a <= 2 * b && b <= 2 * a) }' ||
    fail "torch $torch_ips img/s is not within 2x of cnn_train's $cnn_ips img/s"
  echo "ok: resnet50 b64 on v100-pcie3: torch $torch_ips img/s, cnn_train $cnn_ips img/s (virtual)"
  ;;
resnet50_oom)
  run torch "$simgpu_run" "$python" "$here/resnet50_loop.py" 640 2
  [ "$rc" -eq 3 ] || fail "torch at batch 640: exit $rc, expected 3 (OutOfMemoryError)"
  echo "ok: $(grep '^oom' "$work/torch.out")"
  ;;
transformer)
  run torch "$simgpu_run" "$python" "$here/transformer_loop.py" 5
  [ "$rc" -eq 0 ] || fail "torch: exit $rc"
  [ "$(grep -c '^iter ' "$work/torch.out")" -eq 5 ] || fail "torch: not 5 iterations"
  peak=$(last_value "$work/torch.out" max_memory_allocated)
  [ "${peak:-0}" -gt 0 ] || fail "torch: no max_memory_allocated"
  echo "ok: transformer, 5 iterations, max_memory_allocated $peak bytes"
  ;;
free)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1
  export PYTORCH_NO_CUDA_MEMORY_CACHING
  run torch "$simgpu_run" "$python" "$here/free_behind_torch.py"
  [ "$rc" -eq 0 ] || fail "torch: exit $rc (the kernel over freed memory did not fail)"
  grep -q '^freed 0' "$work/torch.out" || fail "cudaFree through ctypes did not succeed"
  grep -q '^error: .*illegal memory access' "$work/torch.out" ||
    fail "the error was not an illegal address: $(grep '^error' "$work/torch.out")"
  echo "ok: $(grep '^error' "$work/torch.out")"
  ;;
pooch_libs)
  # 220 MiB of the run's 450 MiB: the plan swaps some maps and recomputes others (the
  # convolutions' outputs, by re-executing their cuDNN backend plans). Iterations end at the
  # script's torch.cuda.synchronize(); the profiled iteration runs under demand swapping.
  POOCH_ITERATION_MARKER=sync
  POOCH_PROFILE_SWAP=demand
  export POOCH_ITERATION_MARKER POOCH_PROFILE_SWAP
  pooch_run 220MiB "$here/conv_bn_linear.py" 32 5
  grep -q '^done' "$work/torch.out" || fail "torch under pooch: no done line"
  replayed cudnnBackendExecute
  for f in cudnnBackendExecute cudnnBatchNormalizationForwardTrainingEx \
           cudnnBatchNormalizationBackwardEx cublasGemmEx cublasLtMatmul; do
    grep -q "^pooch: calls: $f [1-9]" "$work/torch.err" || fail "$f was not a modelled call"
  done
  echo "ok: conv_bn_linear under pooch at 220 MiB: $(grep -c '^iter ' "$work/torch.out") iterations, $(grep '^pooch: recompute:' "$work/torch.err" | cut -d' ' -f3-14)"
  ;;
pooch_gemm)
  # Note [GEMM replay]: linear_stack.py (Linear layers that are one cublasGemmEx each) under pooch
  # at 72 MiB of its 96 MiB: the plan recomputes a layer's output, which is dropped after forward
  # and rebuilt by replaying its cublasGemmEx (the trace's recompute events name the call), with
  # no failed replay, no simgpu hazard and no pooch error. Values are not computed here (timing
  # mode); tests/interpose's gemm_replay compares replayed GEMM outputs byte for byte.
  POOCH_ITERATION_MARKER=sync
  POOCH_PROFILE_SWAP=demand
  export POOCH_ITERATION_MARKER POOCH_PROFILE_SWAP
  pooch_run 72MiB "$here/linear_stack.py" 16384 5
  grep -q '^done' "$work/torch.out" || fail "torch under pooch: no done line"
  replayed cublasGemmEx
  echo "ok: linear_stack under pooch at 72 MiB: $(grep '^pooch: recompute:' "$work/torch.err" | cut -d' ' -f3-14)"
  ;;
pooch_resnet)
  unset POOCH_ITERATION_MARKER POOCH_PROFILE_SWAP
  pooch_run 650MiB "$here/../../gpu/torch_train.py" resnet50 incore 16 8
  [ "$(grep -c '^iter ' "$work/torch.out")" -eq 8 ] || fail "torch under pooch: not 8 iterations"
  grep -q '^pooch: iterations: marker auto profiles [1-9]' "$work/torch.err" ||
    fail "no iteration found: $(grep '^pooch: iterations:' "$work/torch.err")"
  replayed cudnnBackendExecute
  grep -q '^pooch: recompute: .* forgotten 0 swapped_instead 0 ' "$work/torch.err" ||
    fail "recipes lost: $(grep '^pooch: recompute:' "$work/torch.err")"
  grep -q '^pooch: opaque: calls 0 unclassified 0' "$work/torch.err" ||
    fail "$(grep '^pooch: opaque:' "$work/torch.err")"
  echo "ok: resnet50 b16 under pooch at 650 MiB: $(grep '^pooch: plan:' "$work/torch.err" | cut -d' ' -f5-10), $(grep '^pooch: recompute:' "$work/torch.err" | cut -d' ' -f3-14)"
  ;;
ddp_ranks)
  # Issue 39, point 4 (Note [One pooch per process]): ddp_ranks.py's two ranks under torchrun
  # (gloo, DDP over four Linear layers in one gradient bucket, batch 1024, 12 iterations: with
  # DDP's default buckets the first bucket's all-reduce ran on gloo's thread beside backward, the
  # two threads' calls interleaved as the machine's load had them, and under load a rank's
  # profiled iterations differed and it ended with no plan) on simulated 96 MiB devices,
  # once without pooch and once under `pooch run --memory-limit 40%`, each rank its own pooch at
  # 40 % of its own device (38.4 MiB, under the 47 MiB the ranks' tensors peak at without pooch).
  # Both runs' ranks finish with the same result lines (timing mode computes no values: their
  # iterations and a gloo all-reduce of the ranks' numbers; with computing kernels also their
  # parameters' checksums), every pooch line of the ranks names its rank, each rank writes its
  # own summary file through %r (its rank, the limit as 40 % of its device, a peak within the
  # limit, a plan carried out), and torchrun's agent and shells, which make no CUDA call, print
  # no summary. The two runs go side by side.
  unset POOCH_ITERATION_MARKER POOCH_PROFILE_SWAP
  pooch=$(dirname "$simgpu_run")/pooch
  [ -x "$pooch" ] || fail "no pooch at $pooch"
  torchrun=$(dirname "$python")/torchrun
  [ -x "$torchrun" ] || fail "no torchrun at $torchrun"
  SIMGPU_MEMORY=96MiB
  export SIMGPU_MEMORY
  ddp="$torchrun --standalone --nproc_per_node 2 $here/ddp_ranks.py 1024 12"
  # shellcheck disable=SC2086 # $ddp is the command line, split on purpose
  (run plain "$simgpu_run" $ddp; exit "$rc") &
  plain_pid=$!
  # shellcheck disable=SC2086
  POOCH_SUMMARY_FILE=$work/summary-%r.json run ranks "$pooch" run --memory-limit 40% -- \
    "$simgpu_run" $ddp
  ranks_rc=$rc
  wait "$plain_pid" || fail "without pooch: exit $?"
  [ "$ranks_rc" -eq 0 ] ||
    fail "under pooch: exit $ranks_rc: $(grep -m1 'simgpu:\|pooch.*error\|Error' "$work/ranks.err")"
  ! grep -q '^simgpu:\|^pooch[^:]*: error' "$work/ranks.err" ||
    fail "$(grep -m1 '^simgpu:\|^pooch[^:]*: error' "$work/ranks.err")"
  results() { grep -v ' max_memory_allocated ' "$1" | sort; }
  results "$work/plain.out" >"$work/plain.results"
  results "$work/ranks.out" >"$work/ranks.results"
  [ "$(grep -c ' iter ' "$work/plain.results")" -eq 24 ] || fail "without pooch: not 12 iterations a rank"
  grep -q '^rank 1 ranks_sum 1$' "$work/plain.results" || fail "without pooch: no all-reduce"
  cmp -s "$work/plain.results" "$work/ranks.results" ||
    fail "the ranks' results under pooch differ: $(diff "$work/plain.results" "$work/ranks.results" | head -4)"
  ! grep -q '^pooch: ' "$work/ranks.err" ||
    fail "a line of no rank (torchrun's agent, a shell): $(grep -m1 '^pooch: ' "$work/ranks.err")"
  for r in 0 1; do
    [ "$(grep -c "^pooch\[rank $r\]: limit [0-9.]* MiB (40% of" "$work/ranks.err")" -eq 1 ] ||
      fail "rank $r: not one summary: $(grep "^pooch\[rank $r\]: limit" "$work/ranks.err")"
    peak=$(awk -v r="$r" '$1 == "rank" && $2 == r && $3 == "max_memory_allocated" { print $4 }' \
      "$work/plain.out")
    "$python" - "$work/summary-$r.json" "$r" "$peak" <<'PY' || fail "rank $r's summary file"
import json, sys
s = json.load(open(sys.argv[1]))
rank, peak = int(sys.argv[2]), int(sys.argv[3])
assert s["rank"] == rank, s.get("rank")
assert s["limit_percent"] == 40, s
assert abs(s["limit_bytes"] - 0.4 * s["device_total_bytes"]) < 2**20, s
assert s["limit_bytes"] < peak, (s["limit_bytes"], peak)
assert 0 < s["peak_device_bytes"] <= s["limit_bytes"] and s["swap_outs"] > 0, s
assert s["profiling"]["carried_out"], s["profiling"]
PY
  done
  echo "ok: 2 ranks under pooch at 40 % of 96 MiB, each under its peak of $peak bytes: $(grep '^pooch\[rank 1\]: plan of' "$work/ranks.err")"
  ;;
pooch_repeat)
  # Issue 40: the same run gives the same plan, and the plan holds. transformer_loop.py (its
  # backward runs on PyTorch's autograd thread) under pooch at 1 GiB, twice, with no trace (a
  # trace's host work would move where the threads interleave) and the log at info, whose summary
  # lines the checks read (Note [Summary in words]): the profiles have the same ops and tensors;
  # the plan lines carried out at the end are the same (counts, predicted time, the measured copy
  # bandwidths, headroom and re-plans: a demand swap-in at a kernel access the profile left out,
  # a stale word of torch's by-value ReduceOp, is no miss, Note [Left-out accesses] in
  # core/exec/plan_executor.cc, so re-plans no longer follow from where address reuse put those
  # words); the safety net swapped nothing in the last iteration of either run; and the means of
  # the last three iterations are within 1 % (virtual time). 12 iterations: the plan compared is
  # the one its re-plans end at. About 60 s.
  unset POOCH_ITERATION_MARKER POOCH_PROFILE_SWAP
  pooch=$(dirname "$simgpu_run")/pooch
  [ -x "$pooch" ] || fail "no pooch at $pooch"
  for n in 1 2; do
    POOCH_PROFILE_OUT=$work/profile$n.json
    export POOCH_PROFILE_OUT
    run run$n "$simgpu_run" "$pooch" run --memory-limit 1GiB --log info -- \
      "$python" -W ignore "$here/transformer_loop.py" 12
    [ "$rc" -eq 0 ] ||
      fail "run $n: exit $rc: $(grep -m1 'simgpu:\|pooch: error\|Error' "$work/run$n.err")"
    ! grep -q '^simgpu:\|^pooch: error' "$work/run$n.err" ||
      fail "run $n: $(grep -m1 '^simgpu:\|^pooch: error' "$work/run$n.err")"
    grep '^pooch: plan: policy .*carried out' "$work/run$n.err" | sed 's/ simulations .*//' \
      >"$work/plan$n"
    [ -s "$work/plan$n" ] || fail "run $n: no plan carried out"
    [ "$(grep -c '^iter ' "$work/run$n.out")" -eq 12 ] || fail "run $n: not 12 iterations"
    grep -q '^pooch: plan_run: .* safety_net_last_iteration 0 ' "$work/run$n.err" ||
      fail "run $n: the safety net swapped in in the last iteration: $(grep '^pooch: plan_run:' "$work/run$n.err")"
    awk '$1 == "iter" { t[n++] = $4 } END { print (t[n-1] + t[n-2] + t[n-3]) / 3 }' \
      "$work/run$n.out" >"$work/steady$n"
  done
  cmp -s "$work/plan1" "$work/plan2" ||
    fail "the two runs' plans differ: $(cat "$work/plan1") / $(cat "$work/plan2")"
  same_shape=yes
  "$python" - "$work/profile1.json" "$work/profile2.json" <<'PY' || same_shape=no
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
def shape(p):
    return ([(o["name"], o["kind"], o["phase"]) for o in p["ops"]],
            sorted(t["bytes"] for t in p["tensors"]))
if shape(a) != shape(b):
    print(f"ops {len(a['ops'])} and {len(b['ops'])}, tensors {len(a['tensors'])} and "
          f"{len(b['tensors'])}")
    sys.exit(1)
PY
  [ "$same_shape" = yes ] || fail "the two runs' profiles differ"
  s1=$(cat "$work/steady1")
  s2=$(cat "$work/steady2")
  awk -v a="$s1" -v b="$s2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * a) }' ||
    fail "the last iterations took $s1 ms and $s2 ms: not within 1 %"
  nets=$(for n in 1 2; do
    grep '^pooch: plan_run:' "$work/run$n.err" |
      sed 's/.* safety_net_swap_ins \([0-9]*\) left_out_swap_ins \([0-9]*\) .*/\1 (\2 left out)/'
  done | paste -sd/ -)
  echo "ok: transformer under pooch at 1 GiB, twice: the same plan" \
    "($(cut -d' ' -f5- "$work/plan1")); safety-net swap-ins $nets;" \
    "last iterations $s1 ms and $s2 ms (virtual)"
  ;;
*) fail "unknown case $case_name" ;;
esac
