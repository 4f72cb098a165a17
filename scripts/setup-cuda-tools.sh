#!/usr/bin/env bash
# Installs the pinned nvdisasm and cuobjdump (scripts/cuda-tools-requirements.txt) into
# build/cuda-tools/, a small venv: their binaries land in
# build/cuda-tools/lib/python3.*/site-packages/nvidia/cu13/bin/, which pooch and the build look in
# (core/kernels/tools.h). Idempotent and offline-safe: a venv whose stamp names the same
# requirements is left alone without touching the network.
#
# Usage: scripts/setup-cuda-tools.sh
# Environment: CUDA_TOOLS_VENV (default build/cuda-tools), PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CUDA_TOOLS_VENV:-build/cuda-tools}"
python="${PYTHON:-python3}"
requirements=scripts/cuda-tools-requirements.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
stamp="$venv/.pooch-requirements"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "setup-cuda-tools: $venv is up to date"
  exit 0
fi
rm -rf "$venv"
"$python" -m venv "$venv"
# --no-deps with hashes: exactly the listed files, nothing resolved behind our back.
"$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --no-deps \
  --require-hashes -r "$requirements"
echo "$want" >"$stamp"
echo "setup-cuda-tools: installed nvdisasm and cuobjdump into $venv"
