#!/usr/bin/env bash
# Every CUDA function the installed torch wheel imports must be exported by simgpu's library of
# that soname, under the version node the importer names: Python loads torch's libraries with
# RTLD_NOW, so one missing name makes `import torch` fail on simgpu.
#
# usage: torch_symbols_test.sh SIMGPU_LIB_DIR [VENV]
#   VENV: the torch virtual environment (default $POOCH_TORCH_VENV, else build/torch-venv of the
#   source tree); its site-packages holds torch, torchvision and the nvidia-* packages.
#
# The importers are torch/lib/*.so*, torchvision/*.so and nvidia/*/lib/*.so*, except the
# libraries simgpu replaces (nvidia/cu13/lib/libcudart.so.13, libcublas.so.13, libcublasLt.so.13
# and nvidia/cudnn/): the rule of scripts/gen_simgpu_stubs.py, which makes the stubs from the
# same list (checked in as tests/simgpu/torch_imports.txt).
set -euo pipefail

lib_dir=${1:?usage: torch_symbols_test.sh SIMGPU_LIB_DIR [VENV]}
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${2:-${POOCH_TORCH_VENV:-$root/build/torch-venv}}
site=$(ls -d "$venv"/lib/python3*/site-packages 2>/dev/null | head -1 || true)
if [[ -z $site || ! -d $site/torch/lib ]]; then
  echo "FAIL: no torch installed at $venv (run scripts/setup-torch.sh, or set POOCH_TORCH_VENV)"
  exit 1
fi

# The version nodes of the libraries simgpu provides; each is also the soname of its library.
nodes='libcudart.so.13|libcuda.so.1|libcudnn.so.9|libcublas.so.13|libcublasLt.so.13'

imports=$(mktemp)
trap 'rm -f "$imports"' EXIT
shopt -s nullglob
importers=0
for f in "$site"/torch/lib/*.so* "$site"/torchvision/*.so "$site"/nvidia/*/lib/*.so*; do
  rel=${f#"$site"/}
  case $rel in
    nvidia/cudnn/* | nvidia/cu13/lib/libcudart.so.13 | nvidia/cu13/lib/libcublas.so.13 | \
      nvidia/cu13/lib/libcublasLt.so.13) continue ;;
  esac
  [[ -f $f ]] || continue
  importers=$((importers + 1))
  nm -D --undefined-only --with-symbol-versions "$f" 2>/dev/null |
    awk -v re="@($nodes)\$" '$NF ~ re { print $NF }' >>"$imports"
done
sort -u -o "$imports" "$imports"
total=$(wc -l <"$imports")
if ((importers == 0 || total == 0)); then
  echo "FAIL: found no CUDA imports under $site ($importers libraries): not a CUDA torch wheel?"
  exit 1
fi

# name@node -> is it defined in lib_dir/<node>, under that node (and not only elsewhere)?
missing=0
for node in ${nodes//|/ }; do
  wanted=$(grep "@$node\$" "$imports" || true)
  [[ -n $wanted ]] || continue
  lib=$lib_dir/$node
  if [[ ! -e $lib ]]; then
    echo "FAIL: $lib does not exist; torch imports $(wc -l <<<"$wanted") names from it"
    missing=$((missing + $(wc -l <<<"$wanted")))
    continue
  fi
  defined=$(nm -D --defined-only --with-symbol-versions "$lib" | awk '{ sub("@@", "@", $NF); print $NF }')
  while read -r sym; do
    if ! grep -qxF "$sym" <<<"$defined"; then
      where=""
      for other in "$lib_dir"/lib*.so.*; do
        [[ $other == "$lib" ]] && continue
        if nm -D --defined-only "$other" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' |
          grep -qxF "${sym%@*}"; then
          where=" (defined in $(basename "$other") instead)"
        fi
      done
      echo "missing: $sym$where"
      missing=$((missing + 1))
    fi
  done <<<"$wanted"
done

# The checked-in list the stubs were generated from should be this wheel's (CI builds without it).
if ! cmp -s "$imports" "$root/tests/simgpu/torch_imports.txt"; then
  echo "note: tests/simgpu/torch_imports.txt is not this wheel's import list;" \
    "regenerate with scripts/gen_simgpu_stubs.py --site-packages $site"
fi

if ((missing > 0)); then
  echo "FAIL: $missing of the $total CUDA symbols torch imports are not exported by simgpu"
  exit 1
fi
echo "ok: all $total CUDA symbols imported by $importers libraries under $site are exported by $lib_dir"
