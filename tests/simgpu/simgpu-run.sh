#!/usr/bin/env bash
# simgpu-run [--] CMD ARGS...: runs CMD on simgpu, the CPU reference device.
#
# simgpu's libraries must win over every real CUDA library the command could load, including
# the copies a Python wheel finds through its own RPATH (torch/lib/*.so look in
# ../../nvidia/*/lib first). LD_LIBRARY_PATH alone loses to DT_RPATH, so the libraries are also
# preloaded: the dynamic loader then satisfies every later NEEDED entry and every dlopen by
# soname (libcudart.so.13, libcuda.so.1, ...) with the copy already loaded. A dlopen by full
# path still loads the named file; torch's own preloading does that only for wheels that are
# installed, and scripts/setup-torch.sh installs none that simgpu replaces.
#
# An LD_PRELOAD already set (libpooch.so by `pooch run`) stays in front of simgpu's, so
# `simgpu-run pooch run -- CMD` and `pooch run -- simgpu-run CMD` both put libpooch first.
# SIMGPU_* variables pass through (docs/simgpu.md, "SIMGPU_*"); PyTorch needs SIMGPU_COMPUTE=timing.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
lib=$(cd "$here/../lib/simgpu" 2>/dev/null && pwd) || {
  echo "simgpu-run: no simgpu libraries at $here/../lib/simgpu (build the simgpu_libs target)" >&2
  exit 2
}
[ "${1:-}" = -- ] && shift
if [ $# -eq 0 ]; then
  echo "simgpu-run: usage: simgpu-run [--] CMD ARGS..." >&2
  exit 2
fi
preload=""
for soname in libcudart.so.13 libcuda.so.1 libcudnn.so.9 libcublasLt.so.13 libcublas.so.13; do
  if [ ! -e "$lib/$soname" ]; then
    echo "simgpu-run: $lib/$soname is missing (build the simgpu_libs target)" >&2
    exit 2
  fi
  preload="${preload:+$preload:}$lib/$soname"
done
# Whatever was preloaded before (libpooch.so) keeps its place in front.
export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$preload"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
