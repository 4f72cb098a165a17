#!/usr/bin/env bash
# Installs the pinned PyTorch (scripts/torch-requirements.txt) into build/torch-venv/, for
# running unmodified PyTorch on simgpu (build/bin/simgpu-run). Idempotent and offline-safe: a
# venv whose stamp names the same requirements is left alone without touching the network.
#
# Usage: scripts/setup-torch.sh
# Environment: TORCH_VENV (default build/torch-venv), PYTHON (default python3; the pinned wheels
#              are CPython 3.11 ones).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${TORCH_VENV:-build/torch-venv}"
python="${PYTHON:-python3}"
requirements=scripts/torch-requirements.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
stamp="$venv/.pooch-requirements"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "setup-torch: $venv is up to date"
  exit 0
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$version" != 3.11 ]; then
  echo "setup-torch: $python is Python $version; the pinned wheels need 3.11 (set PYTHON)" >&2
  exit 2
fi
start=$SECONDS
rm -rf "$venv"
"$python" -m venv "$venv"
# --no-deps with hashes: exactly the listed files, nothing resolved behind our back.
"$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check --no-deps \
  --require-hashes -r "$requirements"
echo "$want" >"$stamp"
echo "setup-torch: installed $(grep -c '==' "$requirements") packages into $venv in $((SECONDS - start)) s"
