#!/bin/sh
# --own-kernels gives the parameters of the cuDNN calls it replaces, bit for bit, on simgpu in
# math mode (where the kernels run as their CPU twins, Note [CPU twins]): ReLU and out-of-place
# residual additions (tiny), and in-place bias and skip additions (--conv-bias --inplace-skips).
# Args: CNN_TRAIN SIMGPU_LIB_DIR.
set -u
bin=$1
LD_LIBRARY_PATH=$2
export LD_LIBRARY_PATH
unset SIMGPU_COMPUTE
status=0
checksum() {
  "$bin" "$@" | awk '$1 == "params_checksum" { print $2 }'
}
for variant in "" "--conv-bias --inplace-skips"; do
  # shellcheck disable=SC2086 # the variant is a list of flags
  plain=$(checksum --model tiny --batch 16 --iters 2 $variant)
  # shellcheck disable=SC2086
  own=$(checksum --model tiny --batch 16 --iters 2 $variant --own-kernels)
  if [ -z "$plain" ] || [ "$plain" != "$own" ]; then
    echo "FAIL: tiny $variant: cuDNN $plain, own kernels $own"
    status=1
  else
    echo "ok: tiny $variant: $plain"
  fi
done
exit $status
