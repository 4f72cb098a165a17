#!/usr/bin/env bash
# docs/usage.md's table of POOCH_* variables must be exactly what `pooch variables` prints from
# core/config's table: the documentation cannot drift from the parser.
set -euo pipefail
pooch=$1 doc=$2
expected=$("$pooch" variables)
# The page holds the table between the two marker comments.
actual=$(sed -n '/<!-- pooch variables: begin -->/,/<!-- pooch variables: end -->/p' "$doc" |
         sed '1d;$d')
if [ "$expected" != "$actual" ]; then
  echo "$doc's POOCH_* table differs from 'pooch variables'; regenerate it:" >&2
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  exit 1
fi
# And every variable the table names appears nowhere without its row (a cheap sanity check that
# the table is not empty).
[ "$(echo "$expected" | grep -c '^| `POOCH_')" -ge 10 ] || { echo "too few variables" >&2; exit 1; }
echo "docs/usage.md variables table matches (OK)"
