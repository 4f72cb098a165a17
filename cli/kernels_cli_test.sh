#!/usr/bin/env bash
# `pooch kernels` on the cubins core/kernels' tests build (analysis_kernels.cu for sm_80, sm_90,
# sm_100): the JSON's exact shape and a few verdicts, a fat binary's kernels through cuobjdump,
# --arch filtering, the text summary, and one-line errors for bad input.
# Usage: kernels_cli_test.sh POOCH CUBIN_DIR NVCC
set -euo pipefail
pooch=$1 dir=$2 nvcc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$pooch" kernels --json "$dir/analysis_kernels.sm_90.cubin" >"$tmp/out.json" 2>"$tmp/err"
python3 - "$tmp/out.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert list(doc) == ["kernels"], doc.keys()
by = {k["name"]: k for k in doc["kernels"]}
assert len(by) == 22, len(by)
for k in doc["kernels"]:
    assert list(k) == ["name", "arch", "writes", "reads", "replayable", "why"], k
    assert k["arch"] == "sm_90", k
    assert k["writes"] == "unknown" or all(isinstance(w, int) for w in k["writes"]), k
    assert isinstance(k["replayable"], bool) and k["why"], k
def check(name, writes, reads, replayable):
    k = by[name]
    assert (k["writes"], k["reads"], k["replayable"]) == (writes, reads, replayable), k
check("k_out_of_place", [0], [8], True)
check("k_in_place", [0], [0], False)
check("k_struct", [0], [8], True)
check("k_atomic", [0], [0, 8], False)
check("k_second_output", [0, 8], [16], True)
check("k_noinline", [0], [8], True)
check("k_chase", "unknown", [0], False)
check("k_halves", "unknown", [], False)
check("k_select", [0, 8], [16], True)
check("k_assert", [0], [8, 16], True)  # Note [System calls]
# Note [Conditional escapes]: exact, the escaping word named in why.
check("k_fill_scalar", [0], [], True)
assert "escapes 0x8: exact unless a pointer" in by["k_fill_scalar"]["why"], by["k_fill_scalar"]
print("json OK")
PY
grep -q '^pooch: 22 kernels: 16 exact (writes and reads known), 3 exact unless' "$tmp/err" || { cat "$tmp/err"; exit 1; }

# A fat binary holding two architectures: --arch picks one, without it both come.
"$nvcc" -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
  -o "$tmp/k.fatbin" "$(dirname "$0")/../core/kernels/testdata/analysis_kernels.cu"
n90=$("$pooch" kernels --arch sm_90 --json "$tmp/k.fatbin" 2>/dev/null | grep -c '"arch": "sm_90"')
[ "$n90" = 22 ] || { echo "fat binary, --arch sm_90: $n90 kernels" >&2; exit 1; }
"$pooch" kernels "$tmp/k.fatbin" >"$tmp/text"
tail -1 "$tmp/text" | grep -q '^44 kernels: 32 exact' || { tail -1 "$tmp/text"; exit 1; }
grep -q '^k_out_of_place sm_80: writes 0x0; reads 0x8$' "$tmp/text" || { cat "$tmp/text"; exit 1; }

# Bad input: one line, exit 2.
for args in "" "--bogus x" "/nonexistent.cubin" "--arch 90 x"; do
  set +e
  # shellcheck disable=SC2086
  "$pooch" kernels $args >/dev/null 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^pooch: ' "$tmp/err" ||
    { echo "pooch kernels $args: rc $rc"; cat "$tmp/err"; exit 1; }
done
echo "not a cubin" >"$tmp/text.txt"
if "$pooch" kernels "$tmp/text.txt" 2>"$tmp/err"; then echo "a text file passed" >&2; exit 1; fi
grep -q '^pooch: ' "$tmp/err"
echo "pooch kernels OK"
