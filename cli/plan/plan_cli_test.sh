#!/usr/bin/env bash
# The `pooch plan` command line: exit codes, one-line errors, output files.
# Usage: plan_cli_test.sh path/to/pooch   (ctest runs it as cli_plan, label cli)
#
# Exit codes (cli/subcommand.h): 0 a plan fits; 1 no plan fits; 2 bad input; 3 internal error.
# Every failure must print exactly one line on stderr, starting with "pooch: ".
set -u
POOCH=${1:?usage: plan_cli_test.sh path/to/pooch}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
checks=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect RC [pattern-on-stderr] -- ARGS...: runs pooch ARGS, checks the exit code; for a
# non-zero code also that stderr is one line starting "pooch: " and containing the pattern.
expect() {
  local want=$1 pattern=$2
  shift 3
  checks=$((checks + 1))
  "$POOCH" "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  if [[ $rc -ne $want ]]; then
    fail "pooch $* -> exit $rc, want $want; stderr: $(head -c 400 "$WORK/err")"
    return
  fi
  if [[ $want -ne 0 ]]; then
    local lines
    lines=$(wc -l <"$WORK/err")
    if [[ $lines -ne 1 ]]; then
      fail "pooch $* -> $lines lines on stderr, want 1: $(head -c 400 "$WORK/err")"
    elif ! grep -q '^pooch: ' "$WORK/err"; then
      fail "pooch $* -> stderr lacks the 'pooch: ' prefix: $(cat "$WORK/err")"
    elif [[ -n $pattern ]] && ! grep -qF -- "$pattern" "$WORK/err"; then
      fail "pooch $* -> stderr lacks '$pattern': $(cat "$WORK/err")"
    fi
  fi
}

json_ok() {
  checks=$((checks + 1))
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>"$WORK/jerr" ||
    fail "$1 is not valid JSON: $(head -c 300 "$WORK/jerr")"
}

# --- help and dispatch
expect 0 "" -- --help
expect 0 "" -- plan --help
grep -q -- '--policy' "$WORK/out" || fail "plan --help does not list --policy"
expect 2 "missing command" --
expect 2 "unknown command 'frob'" -- frob

# --- bad flags and values
expect 2 "exactly one of --model" -- plan
expect 2 "unknown model 'resnet51'" -- plan --model resnet51
expect 2 "unknown machine 'v200'" -- plan --model tiny --machine v200
expect 2 "unknown policy 'best'" -- plan --model tiny --policy best
expect 2 "unknown flag --frobnicate" -- plan --model tiny --frobnicate 3
expect 2 "missing value for --batch" -- plan --model tiny --batch
expect 2 "missing value for --batch" -- plan --model tiny --batch --image 32
expect 2 "missing value for --model" -- plan --model
expect 2 "--batch 0" -- plan --model tiny --batch 0
expect 2 "--batch -3" -- plan --model tiny --batch -3
expect 2 "not an integer" -- plan --model tiny --batch 99999999999999999999
expect 2 "not an integer" -- plan --model tiny --batch 12abc
expect 2 "--image 0" -- plan --model tiny --image 0
expect 2 "negative" -- plan --model tiny --memory -1GiB
expect 2 "too large" -- plan --model tiny --memory 99999999999TiB
expect 2 "unknown unit" -- plan --model tiny --memory 12QB
expect 2 "--link-gbps" -- plan --model tiny --link-gbps -3
expect 2 "--link-gbps" -- plan --model tiny --link-gbps fast
expect 2 "--link-gbps" -- plan --model tiny --link-gbps nan
expect 2 "--refine -1" -- plan --model tiny --refine -1
expect 2 "not an integer" -- plan --model tiny --refine many
expect 2 "given twice" -- plan --model tiny --model tiny
expect 2 "unexpected argument" -- plan --model tiny extra
expect 2 "does not fit input extent" -- plan --model alexnet --image 16
expect 2 "frames applies to resnext101-3d" -- plan --model resnet50 --frames 8
expect 2 "need one --policy" -- plan --model tiny --policy all --trace "$WORK/t.json"
expect 2 "cannot write" -- plan --model tiny --json /nonexistent-dir/plan.json

# --- profile files: good, then broken in every way we can think of
expect 0 "" -- plan --model tiny --write-profile "$WORK/tiny.json"
json_ok "$WORK/tiny.json"
expect 0 "" -- plan --profile "$WORK/tiny.json" --batch 8
grep -q 'img/s' "$WORK/out" || fail "--profile with --batch should print img/s"
expect 2 "cannot read profile" -- plan --profile "$WORK/missing.json"
expect 2 "--image and --frames apply to --model" -- plan --profile "$WORK/tiny.json" --image 5
head -c 300 "$WORK/tiny.json" >"$WORK/truncated.json"
expect 2 "truncated.json" -- plan --profile "$WORK/truncated.json"
echo 'not json at all' >"$WORK/garbage.json"
expect 2 "garbage.json" -- plan --profile "$WORK/garbage.json"
: >"$WORK/empty.json"
expect 2 "empty.json" -- plan --profile "$WORK/empty.json"
mutate() {  # mutate OUT PYTHON-STATEMENT-ON-d
  python3 - "$WORK/tiny.json" "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d))
EOF
}
mutate "$WORK/negative.json" 'd["tensors"][2]["bytes"] = -5'
expect 2 "negative.json" -- plan --profile "$WORK/negative.json"
mutate "$WORK/dangling.json" 'd["ops"][1]["reads"].append(4000)'
expect 2 "dangling.json" -- plan --profile "$WORK/dangling.json"
mutate "$WORK/format.json" 'd["format"] = "something-else"'
expect 2 "format.json" -- plan --profile "$WORK/format.json"
# A size past int64 (json.dumps cannot write it; substitute the text).
sed 's/"bytes": *[0-9]*/"bytes": 99999999999999999999999/' "$WORK/tiny.json" >"$WORK/huge.json"
expect 2 "huge.json" -- plan --profile "$WORK/huge.json"

# --- plans that do not fit: exit 1 with the reason
expect 1 "in-core needs" -- plan --model resnet50 --batch 256 --policy in-core
expect 1 "no plan fits" -- plan --model resnet50 --batch 640 --policy superneurons
expect 1 "no plan fits in 1.00 MiB" -- plan --model tiny --memory 1MiB --policy pooch
expect 1 "no plan fits" -- plan --model tiny --memory 1MiB --policy swap-all
expect 1 "" -- plan --model tiny --memory 1MiB --policy all

# --- plans that fit, with their outputs
expect 0 "" -- plan --model resnet50 --batch 640 --policy pooch \
  --json "$WORK/plan.json" --trace "$WORK/trace.json"
for key in decisions iteration peak in-core overhead; do
  grep -q "^$key" "$WORK/out" || fail "plan output lacks the '$key' line"
done
grep -q 'img/s' "$WORK/out" || fail "plan output lacks img/s"
json_ok "$WORK/plan.json"
json_ok "$WORK/trace.json"
checks=$((checks + 1))
python3 - "$WORK/trace.json" "$WORK/plan.json" <<'EOF' || fail "trace/plan content"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["displayTimeUnit"] == "ms"
ev = t["traceEvents"]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"compute", "recompute", "swap-out (device to host)",
        "swap-in (host to device)"} <= names, names
for e in ev:
    assert {"name", "ph", "pid", "tid"} <= e.keys(), e
    if e["ph"] == "X":
        assert e["dur"] >= 0 and "ts" in e, e
kinds = {e.get("cat") for e in ev if e["ph"] == "X"}
assert {"swap-out", "swap-in", "recompute"} <= kinds, kinds
assert any(e["ph"] == "C" and e["name"] == "device memory" for e in ev)
p = json.load(open(sys.argv[2]))
assert p["policy"] == "pooch" and p["counts"]["recompute"] > 0, p["counts"]
EOF

expect 0 "" -- plan --model chain8 --batch 64 --memory 40MiB --policy all
checks=$((checks + 1))
for policy in in-core swap-all-nosched swap-all swap-opt pooch superneurons checkpoint optimal; do
  grep -q "^$policy " "$WORK/out" || fail "--policy all lacks a row for $policy"
done
grep -q '^in-core .*no plan' "$WORK/out" || fail "--policy all: in-core should not fit in 40MiB"

expect 0 "" -- plan --model resnext101-3d --machine v100-nvlink2 --policy swap-all

# --refine: the refinement's budget; more simulations never give pooch a slower plan (every
# plan the refinement takes was simulated faster), and 0 is the paper's method alone.
iteration_ms() { awk '$1 == "iteration" { print $2 }' "$WORK/out"; }
simulations() { sed -n 's/^policy *pooch (\([0-9]*\) simulations.*/\1/p' "$WORK/out"; }
expect 0 "" -- plan --model resnet50 --batch 512 --policy pooch --refine 0
paper_ms=$(iteration_ms) paper_sims=$(simulations)
expect 0 "" -- plan --model resnet50 --batch 512 --policy pooch --refine 3000
refined_ms=$(iteration_ms) refined_sims=$(simulations)
checks=$((checks + 1))
awk -v a="$refined_ms" -v b="$paper_ms" 'BEGIN { exit !(a != "" && b != "" && a <= b) }' ||
  fail "--refine 3000 gave $refined_ms ms, --refine 0 $paper_ms ms"
[[ -n $paper_sims && -n $refined_sims && $refined_sims -gt $paper_sims ]] ||
  fail "--refine 3000 ran $refined_sims simulations, --refine 0 $paper_sims"

echo "$checks checks, $failures failures"
[[ $failures -eq 0 ]]
