#!/bin/sh
# interpose_clash (clash.cmake says what it checks and clash_probe.cc how).
#   clash_test.sh LIBPOOCH SIMGPU_LIB_DIR CLASH_PROBE OTHER_ABSL_LIB
# Exit 0 on success; otherwise prints what failed and exits 1.
set -u
case_name=clash
libpooch=$1
libdir=$2
probe=$3
other_absl=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/clash_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../../case_helpers.sh"
for v in $(env | sed -n 's/^\(POOCH_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
# The checks read the summary's detailed lines, printed at POOCH_LOG=info (Note [Summary in
# words] in interpose/process/summary_words.h).
POOCH_LOG=info
export POOCH_LOG
need_simgpu

# The stand-ins' functions (their own definitions, not the template code they instantiate):
# those the program exports itself and the other library's.
{
  nm -D --defined-only "$probe" | awk '$(NF-1) == "T" && $NF ~ /^_ZN4absl/ { print $NF }'
  nm -D --defined-only "$other_absl" | awk '$(NF-1) == "T" && $NF ~ /^_ZN4absl/ { print $NF }'
} | sort -u >"$work/standins.txt"
[ "$(wc -l <"$work/standins.txt")" -ge 3 ] || fail "want 3 stand-in Abseil functions, found: $(cat "$work/standins.txt")"
# Each must be in libpooch.so, as a local symbol: pooch has its own copy, hidden.
nm "$libpooch" >"$work/pooch_symbols.txt"
while read -r sym; do
  kind=$(awk -v s="$sym" '$NF == s { print $(NF-1); exit }' "$work/pooch_symbols.txt")
  case $kind in
  t) ;;
  "") fail "libpooch.so has no $sym of its own (Abseil not linked in, or the stand-in shows nothing)" ;;
  *) fail "libpooch.so's $sym is of kind '$kind', not a local function" ;;
  esac
done <"$work/standins.txt"

run plain "$probe"
[ "$rc" -eq 0 ] || fail "without pooch: exit $rc"
grep -q '^clash ok$' "$work/plain.out" || fail "without pooch: no 'clash ok'"

run pooch env LD_PRELOAD="$libpooch" POOCH_POLICY=demand POOCH_MEMORY_LIMIT=8MiB "$probe"
grep '^clash:' "$work/pooch.err" && fail "libpooch.so called the program's Abseil"
[ "$rc" -eq 0 ] || fail "under pooch: exit $rc"
grep -q '^clash ok$' "$work/pooch.out" || fail "under pooch: no 'clash ok'"
grep -q '^pooch: summary' "$work/pooch.err" || fail "under pooch: no pooch summary"
outs=$(awk '$1 == "pooch:" && $2 == "swaps:" { print $4 }' "$work/pooch.err")
ins=$(awk '$1 == "pooch:" && $2 == "swaps:" { print $8 }' "$work/pooch.err")
[ "${outs:-0}" -gt 0 ] && [ "${ins:-0}" -gt 0 ] || fail "pooch swapped nothing out and in"
echo "ok: $(wc -l <"$work/standins.txt") stand-in Abseil functions apart from pooch's; $outs swap-outs, $ins swap-ins"
