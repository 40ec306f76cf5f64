#!/usr/bin/env bash
# ct-misses.sh [TEST_BINARY...]: data-cache misses per established ct
# lookup, counted by cachegrind's cache simulation (valgrind): this
# machine's L1d (48 KB, 12-way, 64-byte lines) and its 2 MB L2 doubled
# as the last level (4 MB, 16-way: the 480 MB L3 of this VM would hold
# every table; the earlier measurements in the conntrack doc use the
# same), no prefetcher modelled. For each of conntrack's
# BenchmarkEstablishedOneSize probes (hot: the same 1,000 active
# connections in a table of 1,000 and of 1,000,000, as
# BenchmarkEstablishedHot; all: every connection probed, as
# BenchmarkEstablished) it runs the benchmark for N and 3N lookups and
# prints (misses of 3N - misses of N) / 2N: the fill (its trackers have
# a fixed hash seed, so both runs fill alike), the start and the exit
# cancel (GOGC=off: no collection lands in one run and not the other).
# Unlike timings on a shared host the counts do not depend on the load,
# so they compare two versions: build each with
# `go test -c -o X ./conntrack` and pass both. Without arguments it
# builds and counts the work tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "ct-misses: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
N=${N:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	go test -c -o "$tmp/conntrack.test" ./conntrack
	bins=("$tmp/conntrack.test")
fi
# misses BIN BENCH LOOKUPS: "D1 LL" misses (reads and writes) of one run.
misses() {
	GOGC=off valgrind --tool=cachegrind --cache-sim=yes --D1=49152,12,64 --LL=4194304,16,64 \
		--cachegrind-out-file="$tmp/cg.out" "$1" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" >"$tmp/bench.out" 2>&1 ||
		{ echo "ct-misses: $1 failed under valgrind:" >&2; tail -20 "$tmp/bench.out" >&2; exit 1; }
	awk '/^events:/ {for (i = 2; i <= NF; i++) ev[i-1] = $i} /^summary:/ {for (i = 2; i <= NF; i++) s[ev[i-1]] = $i; print s["D1mr"] + s["D1mw"], s["DLmr"] + s["DLmw"]}' "$tmp/cg.out"
}
for bin in "${bins[@]}"; do
	for bench in 'BenchmarkEstablishedOneSize/hot/conns=1000$' 'BenchmarkEstablishedOneSize/hot/conns=1000000$' \
		'BenchmarkEstablishedOneSize/all/conns=1000$' 'BenchmarkEstablishedOneSize/all/conns=1000000$'; do
		read -r d1a lla < <(misses "$bin" "$bench" "$N")
		read -r d1b llb < <(misses "$bin" "$bench" "$((3 * N))")
		awk -v b="$bin" -v n="$N" -v bench="$bench" -v d1a="$d1a" -v d1b="$d1b" -v lla="$lla" -v llb="$llb" \
			'BEGIN {printf "%s %s: %.2f L1d misses, %.2f last-level misses per lookup\n", b, bench, (d1b-d1a)/(2*n), (llb-lla)/(2*n)}'
	done
done
