#!/usr/bin/env bash
# Runs every native Go fuzz target of the module for a short time each.
# Usage: scripts/fuzz.sh [FUZZTIME]   (default 10s per target)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
targets=0
while IFS=: read -r file _ line; do
	pkg=./$(dirname "$file")
	name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
	echo "== $pkg $name ($fuzztime)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
	targets=$((targets + 1))
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '/vendor/' | sort)
if [ "$targets" -eq 0 ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
echo "fuzzed $targets targets"
