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
#
# What the figure is: valgrind runs the program on a CPU of its own
# (valgrind 3.19 reports a Haswell, "i7-4910MQ": AVX2, no AVX-512), so
# the masked comparator counted is the AVX2 one and the Go runtime's
# memmove takes its AVX2 paths, whatever the host has. To keep the
# figure the same on a valgrind that does emulate AVX-512, the run pins
# it: GODEBUG=cpu.avx512f=off (read by golang.org/x/sys/cpu, which
# chooses the comparator, and by the runtime). The binary it builds is
# GOAMD64=v1 without PGO (Go's defaults, spelled out). On a host with
# AVX-512 the datapath itself runs the AVX-512 comparator, a few
# instructions a packet fewer than counted here. Each line of output
# names the comparator that ran (from the comparator lines cachegrind
# saw execute) and the CPU valgrind presented.
#
# Figures per binary. "single run" is the original method: one run
# of N packets, the pipeline's instructions divided by N, so the
# benchmark's set-up (the fixture's flow installs, compiling actions,
# the hasher's secret, the first b.N=1 run) is spread over the packets
# and counted too. Until 2026-12-02 its -test.bench pattern was
# 'BenchmarkPipeline/^cache$', whose first part go test matches
# unanchored, so that BenchmarkPipelineCT and BenchmarkPipelineCTConns
# also ran, once each with b.N=1 (their subbenchmarks do not match):
# their fixtures (2,002 Executes, two 8 MB conntrack tables and the
# collection they start) were counted as set-up of this benchmark, about
# 55-80 instructions a packet that are not the cache-hit path's. The
# pattern is now '^BenchmarkPipeline$/^cache$'; the old pattern's figure
# is still printed beside it ("old pattern"), so that the two methods
# can be compared (OLD=0 leaves it out). "differential" is a second method, added beside it
# (it does not replace it): two runs under GOGC=off (no collections,
# whose work is not per packet either), of ND and 7*ND packets, and the
# difference of their counts divided by 6*ND, so that whatever does not
# grow with the packets cancels. Set DIFF=0 to print only the first.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "pipeline-instructions: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
N=${N:-300000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	GOAMD64=v1 go test -pgo=off -c -o "$tmp/userdp.test" ./userdp
	bins=("$tmp/userdp.test")
fi
# run BIN N [ENV...]: runs BIN's BenchmarkPipeline/cache for N packets
# under cachegrind, leaving cg_annotate's output in $tmp/ann.out and the
# benchmark's in $tmp/bench.out. PATTERN is the -test.bench pattern.
PATTERN='^BenchmarkPipeline$/^cache$'
OLD_PATTERN='BenchmarkPipeline/^cache$'
run() {
	local bin=$1 n=$2
	shift 2
	env GODEBUG=cpu.avx512f=off "$@" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$tmp/cg.out" "$bin" \
		-test.run '^$' -test.bench "$PATTERN" -test.benchtime "${n}x" >"$tmp/bench.out" 2>&1 ||
		{ echo "pipeline-instructions: $bin failed under valgrind:" >&2; tail -20 "$tmp/bench.out" >&2; exit 1; }
	cg_annotate --threshold=0 --show-percs=no "$tmp/cg.out" 2>/dev/null >"$tmp/ann.out"
}
# pipeline: the instructions of the pipeline's own code in $tmp/ann.out.
pipeline() {
	awk '/ovsdp|memmove|memequal|memclr|bulkBarrier|avx2Body|avx512Body|sse2Body/ && $1 ~ /^[0-9,]+$/ && $2 ~ /:/ {x=$1; gsub(",","",x); s+=x} END{printf "%.0f\n", s}' "$tmp/ann.out"
}
ND=${ND:-100000}
for bin in "${bins[@]}"; do
	run "$bin" "$N"
	cpu=$(sed -n 's/^cpu: //p' "$tmp/bench.out")
	# The comparator: which vector registers the comparator's lines that
	# ran once a packet or more used (ZMM: AVX-512, YMM: AVX2, else SSE2).
	cmp=$(awk -v n="$N" '
		/^-- (Auto|User)-annotated source: / {in_s = ($0 ~ /compare_amd64\.s/); next}
		in_s && $1 ~ /^[0-9,]+$/ {x=$1; gsub(",","",x); if (x+0 >= n) {if ($0 ~ /Z[0-9]/) z=1; else if ($0 ~ /Y[0-9]/) y=1}}
		END {print (z ? "avx512" : (y ? "avx2" : "sse2"))}' "$tmp/ann.out")
	single=$(pipeline)
	line=$(awk -v s="$single" -v n="$N" 'BEGIN{printf "%.0f instructions/packet (single run, N=%d)", s/n, n}')
	if [ "${OLD:-1}" != 0 ]; then
		PATTERN=$OLD_PATTERN run "$bin" "$N"
		old=$(pipeline)
		line+=$(awk -v s="$old" -v n="$N" -v p="$OLD_PATTERN" 'BEGIN{printf "; %.0f instructions/packet (single run, old pattern %s, which also ran BenchmarkPipelineCT and BenchmarkPipelineCTConns once)", s/n, p}')
	fi
	if [ "${DIFF:-1}" != 0 ]; then
		run "$bin" "$ND" GOGC=off
		a=$(pipeline)
		run "$bin" $((7 * ND)) GOGC=off
		b=$(pipeline)
		line+=$(awk -v a="$a" -v b="$b" -v n="$ND" 'BEGIN{printf "; %.1f instructions/packet (differential, GOGC=off, (I(%d)-I(%d))/%d)", (b-a)/(6*n), 7*n, n, 6*n}')
	fi
	echo "$bin: $line (comparator $cmp; valgrind CPU $cpu)"
done
