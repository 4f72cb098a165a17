#!/usr/bin/env bash
# `pooch plan --plot FILE.png` (issue 12): the plan's picture, drawn by gnuplot.
# Usage: plan_plot_test.sh path/to/pooch   (ctest runs it as cli_plan_plot, label cli)
#
# Without gnuplot on PATH: exit 2, one "pooch: " line naming the package, no file. Bad uses:
# exit 2. Then, when gnuplot is installed, a PNG (its magic bytes, a non-trivial size); without
# it the test is skipped (exit 77, ctest's SKIP_RETURN_CODE) after the checks that need none.
set -u
POOCH=${1:?usage: plan_plot_test.sh path/to/pooch}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_error RC PATTERN CMD...: the command exits RC with one stderr line "pooch: ...PATTERN...".
expect_error() {
  local want=$1 pattern=$2
  shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  [[ $rc -eq $want ]] || fail "$* -> exit $rc, want $want; stderr: $(head -c 400 "$WORK/err")"
  [[ $(wc -l <"$WORK/err") -eq 1 ]] || fail "$* -> want one line on stderr: $(cat "$WORK/err")"
  grep -q "^pooch: .*$pattern" "$WORK/err" || fail "$* -> stderr lacks '$pattern': $(cat "$WORK/err")"
}

# No gnuplot to be found: one line that says what to install, and no (empty) file left behind.
expect_error 2 "gnuplot-nox" env PATH=/nonexistent "$POOCH" plan --model tiny --plot "$WORK/none.png"
[[ -e $WORK/none.png ]] && fail "a file was left without gnuplot"
expect_error 2 "need one --policy" "$POOCH" plan --model tiny --policy all --plot "$WORK/all.png"
expect_error 2 "cannot write" "$POOCH" plan --model tiny --plot "$WORK/no/such/folder/p.png"

if ! command -v gnuplot >/dev/null 2>&1; then
  [[ $failures -eq 0 ]] || exit 1
  echo "SKIP: gnuplot is not installed (scripts/setup.sh installs gnuplot-nox): no PNG drawn"
  exit 77
fi

# tiny at 14 MiB swaps a feature map: memory curves, the capacity line and copies on the lanes.
png=$WORK/plan.png
"$POOCH" plan --model tiny --batch 64 --memory 14MiB --plot "$png" >"$WORK/out" 2>"$WORK/err"
rc=$?
[[ $rc -eq 0 ]] || fail "pooch plan --plot -> exit $rc: $(cat "$WORK/err")"
if [[ ! -s $png ]]; then
  fail "no PNG at $png"
else
  magic=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
  [[ $magic == 89504e470d0a1a0a ]] || fail "$png is not a PNG (starts $magic)"
  size=$(wc -c <"$png")
  [[ $size -gt 10000 ]] || fail "$png is only $size bytes"
fi
[[ -s $WORK/err ]] && fail "pooch plan --plot wrote on stderr: $(cat "$WORK/err")"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "ok: $png, $(wc -c <"$png") bytes"
