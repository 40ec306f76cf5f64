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
for bin in "${bins[@]}"; do
	GODEBUG=cpu.avx512f=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$tmp/cg.out" "$bin" \
		-test.run '^$' -test.bench 'BenchmarkPipeline/^cache$' -test.benchtime "${N}x" >"$tmp/bench.out" 2>&1 ||
		{ echo "pipeline-instructions: $bin failed under valgrind:" >&2; tail -20 "$tmp/bench.out" >&2; exit 1; }
	cpu=$(sed -n 's/^cpu: //p' "$tmp/bench.out")
	cg_annotate --threshold=0 --show-percs=no "$tmp/cg.out" 2>/dev/null >"$tmp/ann.out"
	# The comparator: which vector registers the comparator's lines that
	# ran once a packet or more used (ZMM: AVX-512, YMM: AVX2, else SSE2).
	cmp=$(awk -v n="$N" '
		/^-- (Auto|User)-annotated source: / {in_s = ($0 ~ /compare_amd64\.s/); next}
		in_s && $1 ~ /^[0-9,]+$/ {x=$1; gsub(",","",x); if (x+0 >= n) {if ($0 ~ /Z[0-9]/) z=1; else if ($0 ~ /Y[0-9]/) y=1}}
		END {print (z ? "avx512" : (y ? "avx2" : "sse2"))}' "$tmp/ann.out")
	awk -v n="$N" -v b="$bin" -v cmp="$cmp" -v cpu="$cpu" '/ovsdp|memmove|memequal|memclr|bulkBarrier|avx2Body|avx512Body|sse2Body/ && $1 ~ /^[0-9,]+$/ && $2 ~ /:/ {x=$1; gsub(",","",x); s+=x} END{printf "%s: %.0f instructions/packet (comparator %s; valgrind CPU %s)\n", b, s/n, cmp, cpu}' "$tmp/ann.out"
done
