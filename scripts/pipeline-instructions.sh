#!/usr/bin/env bash
# pipeline-instructions.sh [TEST_BINARY...]: instructions per packet of
# userdp's BenchmarkPipeline/cache, counted by cachegrind (valgrind), the
# pipeline's own code only (ovsdp functions, memmove, memclr with its
# bulk write barrier, memequal and the comparator's assembly; the Go
# runtime's scheduler is left out: valgrind
# serialises threads, which inflates it). Unlike timings on a shared
# host, the count is the same from run to run, so it can compare two
# versions: build each with `go test -c -o X ./userdp` and pass both.
# Without arguments it builds and counts the work tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "pipeline-instructions: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
N=${N:-300000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	go test -c -o "$tmp/userdp.test" ./userdp
	bins=("$tmp/userdp.test")
fi
for bin in "${bins[@]}"; do
	valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$tmp/cg.out" "$bin" \
		-test.run '^$' -test.bench 'BenchmarkPipeline/^cache$' -test.benchtime "${N}x" >/dev/null 2>&1
	cg_annotate --threshold=0 --show-percs=no "$tmp/cg.out" 2>/dev/null |
		awk -v n="$N" -v b="$bin" '/ovsdp|memmove|memequal|memclr|bulkBarrier|avx2Body|avx512Body|sse2Body/ && $1 ~ /^[0-9,]+$/ {x=$1; gsub(",","",x); s+=x} END{printf "%s: %.0f instructions/packet\n", b, s/n}'
done
