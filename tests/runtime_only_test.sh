#!/bin/sh
# runtime_only_test.sh FILE...: each ELF object needs only the C and C++ runtime
# (runtime_only in case_helpers.sh). Registered for the pooch CLI by cli/CMakeLists.txt.
set -u
case_name=runtime_only
work=$(mktemp -d "${TMPDIR:-/tmp}/runtime_only_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/case_helpers.sh"
for file in "$@"; do
  runtime_only "$file"
  echo "ok: $file needs only $(tr '\n' ' ' <"$work/needed.txt")"
done
