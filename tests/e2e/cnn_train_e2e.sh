#!/bin/sh
# End-to-end checks of samples/cnn_train on simgpu (registered by CMakeLists.txt here).
#   cnn_train_e2e.sh CASE CNN_TRAIN SIMGPU_LIB_DIR
# CASE:
#   tiny        tiny, 20 iterations: the loss falls (mean of the last 5 below the mean of the
#               first 5) and a second run gives the same checksum and the same virtual ms
#   vary        tiny --vary-batch: every third iteration runs at half the batch
#   resnet50    ResNet-50 b64 224x224 on v100-pcie3 (timing mode, 64 GiB; one line says that
#               it computes no loss, printed as -): img/s within a
#               factor of 2 of the PoocH paper's in-core 316 img/s (158..632)
#   oom         ResNet-50 b640 on a 16 GiB device: exit 3, names the allocation
#   inject      tiny with simgpu's SIMGPU_FAIL=cudaMalloc:N: exit 3 naming the Nth allocation.
#               One tensor per parameter: the 42 parameter tensors in layer order (8 conv
#               weights, 8 x 4 BN tensors, fc weight and bias), then the 26 gradients, then the
#               26 momentum buffers, the ones vector, the input, then conv1 output; N = 69 (the
#               first momentum buffer) and 97 (the first feature map)
#   resnet18    ResNet-18 b8 64x64, 10 classes, math on, 3 iterations: a finite loss that does
#               not rise (with 1000 classes a batch of 8 sees new labels every iteration)
#   unet        unet b8 32x32, 20 iterations (transposed convolutions, skips added in place): the
#               loss falls as in tiny, and a second run gives the same checksum and losses
#   densenet    densenet b8 32x32, 12 iterations (concatenation buffers): the same checks
#   hostloss    tiny --host-loss: a loss_item line before each iteration's line, equal to its
#               loss to the printed digits, and the training bit for bit as without the flag
#   vgg16       VGG-16 b2 32x32, 10 classes, 2 iterations: trains, and the parameters, their
#               gradients and momentum (3 x 33.6 M floats) are most of its peak
#   skipnet     skipnet b16, 8 iterations (gated blocks, issue 16): the gates change across
#               iterations; a second run with the seed gives the same gates, losses and
#               checksum, another seed another checksum
#   moe         moe b8, 8 iterations, 8 experts, top 2: the same checks for the chosen experts,
#               two per iteration, distinct, in 0..7
#   varyimage   tiny --vary-image 16,24,32, 8 iterations: the same checks for the drawn sides,
#               and skipnet with --vary-image trains too
#   args        bad arguments: one line on stderr, exit 2 (no device needed)
# Exit 0 on success; otherwise prints what failed and exits 1.
set -u
case_name=$1
bin=$2
libdir=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/cnn_train_e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../case_helpers.sh"

# run NAME ARGS...: runs cnn_train, stdout to NAME.out, stderr to NAME.err; sets $rc.
run() {
  name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
}

# field FILE KEY: the value after KEY on every "iter" line, one per line.
field() {
  awk -v key="$2" '$1 == "iter" { for (i = 2; i < NF; i++) if ($i == key) print $(i + 1) }' "$1"
}

# Losses are printed with %.6f, so the awk checks below take a finite loss to be one that
# matches /^-?[0-9]+[.][0-9]+$/ ("inf" and "nan" do not).

check_iters() {  # check_iters FILE N: N well-formed iteration lines, peak and checksum
  n=$(grep -c -E '^iter [0-9]+ loss [^ ]+ ms [0-9.]+ img_per_s [0-9.]+$' "$1")
  [ "$n" -eq "$2" ] || fail "$1: expected $2 'iter N loss L ms T img_per_s R' lines, got $n"
  grep -q -E '^peak_device_bytes [0-9]+$' "$1" || fail "$1: no peak_device_bytes line"
  grep -q -E '^params_checksum [0-9a-f]{16}$' "$1" || fail "$1: no params_checksum line"
}

# trains N ARGS...: two runs of cnn_train ARGS (N iterations) exit 0 with N iteration lines;
# the loss is finite and falls (mean of the last 5 below the mean of the first 5); both runs
# give the same losses and params_checksum.
trains() {
  iters=$1
  shift
  run a "$@" --iters "$iters"
  [ "$rc" -eq 0 ] || fail "run 1 exited $rc: $(cat "$work/a.err")"
  check_iters "$work/a.out" "$iters"
  run b "$@" --iters "$iters"
  [ "$rc" -eq 0 ] || fail "run 2 exited $rc"
  field "$work/a.out" loss | awk -v n="$iters" '
    { v[NR] = $1; if ($1 !~ /^-?[0-9]+[.][0-9]+$/) bad = 1 }
    END {
      for (i = 1; i <= 5; i++) { first += v[i]; last += v[NR - 5 + i] }
      first /= 5; last /= 5
      printf "loss: mean of first 5 %.6f, mean of last 5 %.6f\n", first, last
      exit !(NR == n && !bad && last < first)
    }' || fail "the loss did not fall"
  [ "$(grep params_checksum "$work/a.out")" = "$(grep params_checksum "$work/b.out")" ] ||
    fail "two runs gave different params_checksum"
  [ "$(field "$work/a.out" loss)" = "$(field "$work/b.out" loss)" ] ||
    fail "two runs gave different losses"
  grep -E '^(peak_device_bytes|params_checksum)' "$work/a.out"
}

# dynamic KEY ARGS...: runs cnn_train ARGS twice with seed 1 and once with seed 2 (8
# iterations each); KEY's value on the iteration lines (the choices) takes at least two
# values; the seed-1 runs agree on losses, choices and checksum, and seed 2 gives another
# checksum. Leaves the first run in a.out.
dynamic() {
  key=$1
  shift
  run a "$@" --iters 8 --seed 1
  [ "$rc" -eq 0 ] || fail "run 1 exited $rc: $(cat "$work/a.err")"
  n=$(grep -c -E "^iter [0-9]+ loss [0-9]+[.][0-9]+ ms [0-9.]+ img_per_s [0-9.]+( image [0-9]+)?( $key [^ ]+)?\$" "$work/a.out")
  [ "$n" -eq 8 ] || fail "expected 8 iteration lines with $key, got $n"
  grep -q -E '^params_checksum [0-9a-f]{16}$' "$work/a.out" || fail "no params_checksum line"
  field "$work/a.out" "$key" >"$work/choices.txt"
  [ "$(wc -l <"$work/choices.txt")" -eq 8 ] || fail "not every iteration line has its $key"
  [ "$(sort -u "$work/choices.txt" | wc -l)" -ge 2 ] ||
    fail "the $key never changed: $(sort -u "$work/choices.txt" | tr '\n' ' ')"
  run b "$@" --iters 8 --seed 1
  [ "$rc" -eq 0 ] || fail "run 2 exited $rc"
  [ "$(grep params_checksum "$work/a.out")" = "$(grep params_checksum "$work/b.out")" ] ||
    fail "two runs with one seed gave different checksums"
  for k in loss "$key"; do
    [ "$(field "$work/a.out" "$k")" = "$(field "$work/b.out" "$k")" ] ||
      fail "two runs with one seed gave different ${k}s"
  done
  run c "$@" --iters 8 --seed 2
  [ "$rc" -eq 0 ] || fail "seed 2 exited $rc"
  [ "$(grep params_checksum "$work/a.out")" != "$(grep params_checksum "$work/c.out")" ] ||
    fail "seeds 1 and 2 gave the same checksum"
  echo "$key: $(tr '\n' ' ' <"$work/choices.txt")"
  grep params_checksum "$work/a.out"
}

case $case_name in
  skipnet)
    need_simgpu
    dynamic gates --model skipnet --batch 16
    # One 0 or 1 per gated block (five of them).
    grep -q -v -x '[01]\{5\}' "$work/choices.txt" && fail "a gates field is not five 0s and 1s"
    # --force-choices: every iteration runs the given gates; a pattern of another length is a
    # usage error.
    run f --model skipnet --batch 16 --iters 3 --force-choices 'gates 01101'
    [ "$rc" -eq 0 ] || fail "--force-choices exited $rc"
    [ "$(grep -c ' gates 01101$' "$work/f.out")" -eq 3 ] || fail "--force-choices not followed"
    run g --model skipnet --batch 16 --iters 1 --force-choices 'gates 0110'
    [ "$rc" -eq 2 ] || fail "--force-choices 'gates 0110' exited $rc, not 2"
    ;;
  moe)
    need_simgpu
    dynamic experts --model moe --batch 8 --experts 8 --top-k 2
    awk -F, '{ if (NF != 2 || $1 >= $2 || $1 < 0 || $2 > 7) bad = 1 } END { exit bad }' \
      "$work/choices.txt" || fail "not two distinct experts of 0..7, increasing, per iteration"
    run f --model moe --batch 8 --experts 8 --top-k 2 --iters 3 --force-choices 'experts 6,1'
    [ "$rc" -eq 0 ] || fail "--force-choices exited $rc"
    [ "$(grep -c ' experts 1,6$' "$work/f.out")" -eq 3 ] || fail "--force-choices not followed"
    # A sequence separated by ';': iteration i runs the (i mod n)-th; every one is checked.
    run q --model moe --batch 8 --experts 8 --top-k 2 --iters 3 \
      --force-choices 'experts 6,1;experts 2,3'
    [ "$rc" -eq 0 ] || fail "--force-choices with a sequence exited $rc"
    [ "$(awk '{ printf "%s;", $NF }' "$work/q.out" | cut -d';' -f1-3)" = "1,6;2,3;1,6" ] ||
      fail "--force-choices' sequence not followed: $(cat "$work/q.out")"
    for bad in 'experts 1,1' 'experts 1,8' 'experts 1' 'gates 10' 'experts 1,2;' \
      'experts 1,2;experts 3'; do
      run g --model moe --batch 8 --experts 8 --top-k 2 --iters 1 --force-choices "$bad"
      [ "$rc" -eq 2 ] || fail "--force-choices '$bad' exited $rc, not 2"
    done
    for bad in 0 x; do
      run g --model moe --batch 8 --experts 8 --top-k 2 --iters 1 --nvtx-period "$bad"
      [ "$rc" -eq 2 ] || fail "--nvtx-period '$bad' exited $rc, not 2"
    done
    ;;
  varyimage)
    need_simgpu
    dynamic image --model tiny --batch 8 --vary-image 16,24,32
    grep -q -v -x -E '16|24|32' "$work/choices.txt" && fail "a side outside the list"
    run s --model skipnet --batch 8 --iters 4 --vary-image 16,32
    [ "$rc" -eq 0 ] || fail "skipnet --vary-image exited $rc"
    n=$(grep -c -E '^iter [0-9]+ .* image (16|32) gates [01]{5}$' "$work/s.out")
    [ "$n" -eq 4 ] || fail "skipnet --vary-image: $n of 4 iteration lines with a side and gates"
    ;;
  tiny)
    need_simgpu
    run a --model tiny --iters 20
    [ "$rc" -eq 0 ] || fail "run 1 exited $rc"
    check_iters "$work/a.out" 20
    run b --model tiny --iters 20
    [ "$rc" -eq 0 ] || fail "run 2 exited $rc"
    field "$work/a.out" loss | awk '
      { v[NR] = $1; if ($1 !~ /^-?[0-9]+[.][0-9]+$/) bad = 1 }
      END {
        for (i = 1; i <= 5; i++) { first += v[i]; last += v[NR - 5 + i] }
        first /= 5; last /= 5
        printf "loss: mean of first 5 %.6f, mean of last 5 %.6f\n", first, last
        exit !(NR == 20 && !bad && last < first)
      }' || fail "the loss did not fall"
    [ "$(grep params_checksum "$work/a.out")" = "$(grep params_checksum "$work/b.out")" ] ||
      fail "two runs gave different params_checksum"
    [ "$(field "$work/a.out" ms)" = "$(field "$work/b.out" ms)" ] ||
      fail "two runs gave different per-iteration virtual ms"
    [ "$(field "$work/a.out" loss)" = "$(field "$work/b.out" loss)" ] ||
      fail "two runs gave different losses"
    grep -E '^(peak_device_bytes|params_checksum)' "$work/a.out"
    ;;
  vary)
    need_simgpu
    run a --model tiny --iters 6 --batch 16 --vary-batch
    [ "$rc" -eq 0 ] || fail "exited $rc"
    check_iters "$work/a.out" 6
    # Same virtual time for same-sized iterations after the first, less for the half batches.
    field "$work/a.out" ms | awk '{ ms[NR - 1] = $1 }
      END { exit !(ms[2] < ms[1] && ms[5] < ms[4]) }' ||
      fail "half-batch iterations (2 and 5) are not faster than their neighbours"
    ;;
  resnet50)
    need_simgpu
    SIMGPU_PRESET=v100-pcie3 SIMGPU_COMPUTE=timing SIMGPU_MEMORY=64GiB
    export SIMGPU_PRESET SIMGPU_COMPUTE SIMGPU_MEMORY
    run a --model resnet50 --batch 64 --iters 2
    [ "$rc" -eq 0 ] || fail "exited $rc"
    check_iters "$work/a.out" 2
    # Timing mode computes no loss: said once, and no number (it was inf) in its place.
    [ "$(grep -c '^timing mode (SIMGPU_COMPUTE=timing) computes no loss' "$work/a.out")" -eq 1 ] ||
      fail "timing mode: want one line saying it computes no loss"
    [ "$(field "$work/a.out" loss | sort -u)" = "-" ] || fail "timing mode printed a loss"
    cat "$work/a.out"
    # The last iteration: the first may include one-time costs.
    field "$work/a.out" img_per_s | tail -n 1 | awk '{
        printf "ResNet-50 b64 on v100-pcie3: %s img/s (PoocH paper in-core: 316)\n", $1
        exit !($1 >= 158 && $1 <= 632) }' ||
      fail "img/s outside 158..632 (a factor of 2 around the paper's 316)"
    ;;
  oom)
    need_simgpu
    SIMGPU_PRESET=v100-pcie3 SIMGPU_COMPUTE=timing SIMGPU_MEMORY=16GiB
    export SIMGPU_PRESET SIMGPU_COMPUTE SIMGPU_MEMORY
    run a --model resnet50 --batch 640 --iters 1
    [ "$rc" -eq 3 ] || fail "expected exit 3 (out of memory), got $rc"
    grep -q -E '^cnn_train: out of memory allocating .+ \([0-9]+ bytes\)$' "$work/a.err" ||
      fail "stderr does not name the failed allocation"
    cat "$work/a.err"
    ;;
  inject)
    need_simgpu
    for spec in '69:conv1.weight momentum (864 bytes)' '97:conv1 output (1048576 bytes)'; do
      SIMGPU_FAIL=cudaMalloc:${spec%%:*}
      export SIMGPU_FAIL
      run a --model tiny --iters 1
      [ "$rc" -eq 3 ] || fail "$SIMGPU_FAIL: expected exit 3 (out of memory), got $rc"
      grep -q -x "cnn_train: out of memory allocating ${spec#*:}" "$work/a.err" ||
        fail "$SIMGPU_FAIL: stderr does not name ${spec#*:} (conv1: 8x3x3x3 weights, 32x8x32x32 output)"
    done
    ;;
  resnet18)
    need_simgpu
    run a --model resnet18 --batch 8 --image 64 --classes 10 --iters 3 --seed 1
    [ "$rc" -eq 0 ] || fail "exited $rc"
    check_iters "$work/a.out" 3
    cat "$work/a.out"
    field "$work/a.out" loss | awk '
      { v[NR] = $1; if ($1 !~ /^-?[0-9]+[.][0-9]+$/) bad = 1 }
      END { exit !(NR == 3 && !bad && v[3] <= v[1] * 1.05) }' ||
      fail "loss not finite or rising"
    ;;
  unet)
    need_simgpu
    trains 20 --model unet --batch 8 --image 32
    ;;
  densenet)
    need_simgpu
    trains 12 --model densenet --batch 8 --image 32
    ;;
  hostloss)
    need_simgpu
    run a --model tiny --iters 4 --host-loss
    [ "$rc" -eq 0 ] || fail "exited $rc"
    check_iters "$work/a.out" 4
    run b --model tiny --iters 4
    [ "$rc" -eq 0 ] || fail "without --host-loss: exited $rc"
    # Each iteration's loss_item line comes before its iter line, with the same loss.
    awk '$1 == "loss_item" { item[$2] = $3; next }
         $1 == "iter" { n++; if (!($2 in item) || item[$2] != $4) bad = 1 }
         END { exit !(n == 4 && !bad) }' "$work/a.out" ||
      fail "loss_item lines missing, late or different from the iteration's loss"
    [ "$(grep params_checksum "$work/a.out")" = "$(grep params_checksum "$work/b.out")" ] ||
      fail "--host-loss changed params_checksum"
    grep -E '^(loss_item|params_checksum)' "$work/a.out"
    ;;
  vgg16)
    need_simgpu
    run a --model vgg16 --batch 2 --image 32 --classes 10 --iters 2
    [ "$rc" -eq 0 ] || fail "exited $rc"
    check_iters "$work/a.out" 2
    cat "$work/a.out"
    # 33,638,218 trainable floats (conv 14,714,688; fc 2,101,248 + 16,781,312 + 40,970), each
    # with a gradient and a momentum buffer.
    state=$((33638218 * 3 * 4))
    awk -v state="$state" '$1 == "peak_device_bytes" {
        printf "model state %d bytes, peak %d bytes (%.1f %%)\n", state, $2, 100 * state / $2
        exit !($2 > state && state > 0.9 * $2) }' "$work/a.out" ||
      fail "peak not just above the model state"
    field "$work/a.out" loss | awk '$1 !~ /^-?[0-9]+[.][0-9]+$/ { exit 1 }' || fail "loss not finite"
    ;;
  args)
    for bad_args in "--model nope" "--batch 0" "--batch 12x" "--iters" "--frobnicate 1" "extra" \
      "--model unet --image 36" "--host-loss=1" "--experts 4" "--model moe --experts 2 --top-k 3" \
      "--model moe --top-k 0" "--model vgg16 --vary-image 32,64" "--vary-image 32,32" \
      "--vary-image 32,abc" "--image 32 --vary-image 16,32" "--model unet --vary-image 32,36" \
      "--vary-image="; do
      # shellcheck disable=SC2086
      run a $bad_args
      [ "$rc" -eq 2 ] || fail "'$bad_args': expected exit 2, got $rc"
      [ "$(wc -l <"$work/a.err")" -eq 1 ] || fail "'$bad_args': expected one line on stderr"
      [ ! -s "$work/a.out" ] || fail "'$bad_args': printed to stdout"
    done
    ;;
  *)
    echo "usage: cnn_train_e2e.sh tiny|vary|resnet50|oom|inject|resnet18|unet|densenet|hostloss|vgg16|skipnet|moe|varyimage|args CNN_TRAIN SIMGPU_LIB_DIR" >&2
    exit 2
    ;;
esac
echo "PASS ($case_name)"
