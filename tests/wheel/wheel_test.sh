#!/bin/sh
# The pooch wheel as a user gets it (registered by CMakeLists.txt here):
#   wheel_test.sh BUILD_DIR CNN_TRAIN
# scripts/build-wheel.sh --prebuilt makes the wheel from BUILD_DIR's binaries; it is installed
# offline (pip install --no-index) into a fresh venv, and with only that venv's bin/ added to
# PATH, and no LD_LIBRARY_PATH or LD_PRELOAD set (simgpu-run sets them for simgpu alone):
#   - `pooch` and `python -m pooch` run the bundled binary (the same `pooch run --help`), which
#     needs nothing the loader cannot find;
#   - `pooch run` preloads the installed package's libpooch.so, not the build tree's;
#   - cnn_train --model tiny --batch 64, 6 iterations, on a simgpu at 40 % of its in-core peak,
#     where it alone exits 3 (OOM): under `simgpu-run pooch run -- cnn_train` it trains every
#     iteration to the in-core params_checksum, and the summary (pooch: lines) is printed;
#   - with the installed libpooch.so removed, `pooch run` exits 127 with one pooch: line.
# Prints the wheel's size and the install and first run's wall times. Exit 0 on success, 77 when
# the build requirements cannot be installed (build-wheel.sh's 77), 1 with what failed.
set -u
case_name=wheel
build=$1
bin=$2
simgpu_run=$build/bin/simgpu-run
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/wheel_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$root/tests/case_helpers.sh"
[ -x "$simgpu_run" ] || fail "no $simgpu_run (build the simgpu_libs target)"
unset LD_LIBRARY_PATH LD_PRELOAD POOCH_POLICY POOCH_MEMORY_LIMIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

run build "$root/scripts/build-wheel.sh" --build-dir "$build" --out "$work/dist" --prebuilt
[ "$rc" -eq 77 ] && { cat "$work/build.err"; exit 77; }
[ "$rc" -eq 0 ] || fail "build-wheel.sh exited $rc"
wheel=$(cat "$work/build.out")
case $(basename "$wheel") in
  pooch-*-py3-none-manylinux_2_34_x86_64.whl) ;;
  *) fail "wheel named $(basename "$wheel")" ;;
esac
[ -f "$wheel" ] || fail "no wheel at $wheel"

start=$(now)
# A venv without pip of its own (ensurepip takes 20 s on a loaded CI machine), installed into by
# the build venv's pip (--python): the same install, offline, of the file alone.
python3 -m venv --without-pip "$work/venv" || fail "cannot create a venv"
run install "$build/wheel-venv/bin/pip" --python "$work/venv/bin/python" install --isolated \
  --no-index --disable-pip-version-check "$wheel"
[ "$rc" -eq 0 ] || fail "pip install --no-index exited $rc"
install_s=$(since "$start")
PATH=$work/venv/bin:$PATH
export PATH
[ "$(command -v pooch)" = "$work/venv/bin/pooch" ] || fail "pooch on PATH is $(command -v pooch)"
package=$("$work/venv/bin/python" -c 'import pooch, os; print(os.path.dirname(pooch.__file__))')
[ -n "$package" ] || fail "the venv's python cannot import pooch"
case $package in "$work/venv/"*) ;; *) fail "pooch imported from $package, not the venv" ;; esac

run help pooch run --help
[ "$rc" -eq 0 ] || fail "pooch run --help exited $rc"
grep -q '^usage: pooch run' "$work/help.out" || fail "pooch run --help printed no usage"
run module python -m pooch run --help
[ "$rc" -eq 0 ] || fail "python -m pooch run --help exited $rc"
cmp -s "$work/help.out" "$work/module.out" || fail "python -m pooch run --help differs from pooch run --help"
ldd "$package/bin/pooch" >"$work/ldd.out" 2>&1
grep -q 'not found' "$work/ldd.out" && fail "the installed pooch needs a library the loader cannot find"

# The library `pooch run` preloads is the installed one.
run preload pooch run -- printenv LD_PRELOAD
[ "$rc" -eq 0 ] || fail "pooch run -- printenv exited $rc"
want=$(readlink -f "$package/lib/libpooch.so")
[ "$(cut -d: -f1 "$work/preload.out")" = "$want" ] ||
  fail "pooch run preloads '$(cat "$work/preload.out")', not $want"

set -- --model tiny --batch 64 --iters 6
SIMGPU_HAZARDS=error
export SIMGPU_HAZARDS
run incore "$simgpu_run" "$bin" "$@"
[ "$rc" -eq 0 ] || fail "in-core run: exit $rc"
peak=$(awk '$1 == "peak_device_bytes" { print $2 }' "$work/incore.out")
sum=$(awk '$1 == "params_checksum" { print $2 }' "$work/incore.out")
[ -n "$peak" ] && [ -n "$sum" ] || fail "in-core run: no peak or checksum"
SIMGPU_MEMORY=$((peak * 40 / 100))
export SIMGPU_MEMORY
run alone "$simgpu_run" "$bin" "$@"
[ "$rc" -eq 3 ] || fail "without pooch at 40 % ($SIMGPU_MEMORY bytes): exit $rc, want 3 (OOM)"
start=$(now)
run pooch "$simgpu_run" pooch run -- "$bin" "$@"
run_s=$(since "$start")
[ "$rc" -eq 0 ] || fail "under the installed pooch at 40 % ($SIMGPU_MEMORY bytes): exit $rc"
n=$(grep -c '^iter ' "$work/pooch.out")
[ "$n" -eq 6 ] || fail "under the installed pooch: $n iterations, want 6"
same_checksum pooch
grep -q '^pooch: ' "$work/pooch.err" || fail "under the installed pooch: no summary (pooch: lines)"

rm "$package/lib/libpooch.so"
run missing pooch run -- true
[ "$rc" -eq 127 ] || fail "without its library: pooch run exited $rc, want 127"
[ "$(wc -l <"$work/missing.err")" -eq 1 ] && grep -q '^pooch: .*libpooch.so' "$work/missing.err" ||
  fail "without its library: want one pooch: line naming libpooch.so"

echo "ok: $(basename "$wheel") $(du -k "$wheel" | cut -f1) KiB; venv (no pip) and offline install ${install_s} s;" \
  "first pooch run (tiny b64, 6 iterations, 40 % of $peak bytes on simgpu) ${run_s} s"
