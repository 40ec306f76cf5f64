#!/usr/bin/env bash
# Runs every native Go fuzz target of the module for FUZZTIME each, all of
# them even when some fail, then prints a summary table and exits 1 if any
# target failed.
#
# Usage: scripts/fuzz.sh [FUZZTIME]       (default 10s; make fuzz FUZZTIME=1m)
#
# Environment:
#   FUZZ_PARALLEL  go test -parallel for the fuzzing workers (default: Go's
#                  default, GOMAXPROCS); FUZZ_PARALLEL=1 leaves the other
#                  cores free
#   FUZZ_MINIMIZETIME  go test -fuzzminimizetime (default 10s rather than
#                  Go's 60s: the engine minimizes every new corpus entry,
#                  and a minute spent minimizing one input is a minute of
#                  FUZZTIME without fuzzing)
#   FUZZ_STALL     seconds without new executions that fail a target
#                  (default 30): Go does not stop an input that hangs, it
#                  only stops fuzzing when FUZZTIME is up
#   FUZZ_TARGETS   only targets whose "PACKAGE TARGET" (./genl FuzzDecodeFlow)
#                  matches this extended regular expression (default: all)
#   FUZZ_LOGDIR    per-target logs and summary.txt (default .cache/fuzz)
#   GO             the go command (default go)
#
# Results:
#   ok                      go test passed.
#   FAIL                    anything else: a failing input (then written to
#                           PACKAGE/testdata/fuzz/TARGET, named in the notes),
#                           a failing seed or testdata/fuzz entry, a build
#                           error, a target that was not built, or a run
#                           that stalled (no new executions for FUZZ_STALL
#                           seconds: an input that hangs or takes that long,
#                           which Go reports as nothing at all).
#   engine-timeout-retried  the run ended with nothing but the fuzz engine's
#                           own "context deadline exceeded" and wrote no
#                           failing input: a race in Go's fuzz coordinator at
#                           the end of -fuzztime (go.dev/issue/75804, fixed in
#                           Go 1.27), not a finding. The target was run once
#                           more and passed; EXECS and NEW are the rerun's,
#                           TIME is both runs'. If the rerun fails too, FAIL.
# EXECS and NEW are the last "execs:" and "new interesting:" figures of the
# run (NEW: inputs added to the corpus in $(go env GOCACHE)/fuzz).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

fuzztime=${1:-10s}
parallel=${FUZZ_PARALLEL:-}
minimizetime=${FUZZ_MINIMIZETIME:-10s}
stall_limit=${FUZZ_STALL:-30}
only=${FUZZ_TARGETS:-}
logdir=${FUZZ_LOGDIR:-.cache/fuzz}
gocmd=${GO:-go}
if [ $# -gt 1 ] || [[ $fuzztime == -* ]]; then
	echo "usage: $0 [FUZZTIME]   (FUZZTIME as for go test -fuzztime: 10s, 1m, 1000x)" >&2
	exit 2
fi
if [ -n "$parallel" ] && ! [[ $parallel =~ ^[1-9][0-9]*$ ]]; then
	echo "FUZZ_PARALLEL=$parallel: want a positive number of workers" >&2
	exit 2
fi
if ! [[ $stall_limit =~ ^[1-9][0-9]*$ ]]; then
	echo "FUZZ_STALL=$stall_limit: want a positive number of seconds" >&2
	exit 2
fi
mkdir -p "$logdir" || exit 1

# The fuzz engine's spurious stop: the only failure in log $1 is target $2's
# "--- FAIL: NAME (...)" followed directly by the bare, unindented-by-file
# line "    context deadline exceeded" (what testing prints for the
# coordinator's error), and nothing panicked or was written as a failing
# input. A failing test that itself reports a deadline prints "file.go:N: "
# before the message, so it does not match.
engine_timeout() {
	local log=$1 name=$2
	grep -q -e 'Failing input written to' -e '^panic: ' -e '^fatal error: ' "$log" && return 1
	[ "$(grep -c -e '--- FAIL: ' "$log")" -eq 1 ] || return 1
	awk -v head="--- FAIL: $name (" '
		index($0, head) == 1 { if ((getline next_line) > 0 && next_line == "    context deadline exceeded") found = 1 }
		END { exit !found }' "$log"
}

# The last "execs: N" and "new interesting: M" of log $1, as "N M" ("- -"
# when the engine never reported, e.g. on a build error).
fuzz_stats() {
	local s
	s=$(sed -nE 's/^fuzz: elapsed: .*execs: ([0-9]+) .*new interesting: ([0-9]+) .*/\1 \2/p' "$1" | tail -n 1)
	echo "${s:-- -}"
}

# The longest time in log $1 during which the engine's execution count did
# not move, from its progress lines ("fuzz: elapsed: 1m3s, execs: N ..."),
# as "SECONDS FROM TO" (elapsed times in seconds; "0 0 0" without them).
fuzz_stall() {
	awk '
		function secs(s,   n, total) {
			total = 0
			while (match(s, /^[0-9]+[hms]/)) {
				n = substr(s, 1, RLENGTH - 1) + 0
				total += n * (substr(s, RLENGTH, 1) == "h" ? 3600 : substr(s, RLENGTH, 1) == "m" ? 60 : 1)
				s = substr(s, RLENGTH + 1)
			}
			return total
		}
		/^fuzz: elapsed: [0-9hms]+, execs: [0-9]+ / {
			t = secs(substr($3, 1, length($3) - 1)); e = $5
			if (!seen || e != last) { first = t; last = e; seen = 1 }
			if (t - first > best) { best = t - first; from = first; to = t }
		}
		END { printf "%d %d %d\n", best, from, to }' "$1"
}

# table aligns the tab-separated columns of its input: the first three to
# the left, the figures to the right.
table() {
	awk -F '\t' '
		{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } }
		END {
			for (r = 1; r <= NR; r++) {
				line = ""
				for (i = 1; i <= 6; i++) line = line sprintf(i <= 3 ? "%-*s  " : "%*s  ", w[i], cell[r, i])
				sub(/ +$/, "", line)
				print line
			}
		}'
}

# The entries of directory $1, one a line (none if it does not exist).
entries() {
	if [ -d "$1" ]; then
		(cd "$1" && ls -A)
	fi
}

# run_target PKG NAME LOG: one go test -fuzz run, its output in LOG; returns
# go test's status.
run_target() {
	local args=(test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime")
	if [ -n "$parallel" ]; then
		args+=(-parallel "$parallel")
	fi
	echo "\$ $gocmd ${args[*]} $1" >"$3"
	"$gocmd" "${args[@]}" "$1" </dev/null >>"$3" 2>&1
}

interrupted=0
trap 'interrupted=1' INT TERM
rows=() notes=()
failed=0 retried=0 passed=0 targets=0
while IFS=: read -r file _ line; do
	dir=$(dirname "${file#./}")
	pkg=./$dir
	if [ "$dir" = . ]; then
		pkg=. dir=root
	fi
	name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
	if [ -n "$only" ] && ! [[ "$pkg $name" =~ $only ]]; then
		continue
	fi
	targets=$((targets + 1))
	log=$logdir/${dir//\//_}.$name.log
	corpus=$pkg/testdata/fuzz/$name
	echo "== $pkg $name ($fuzztime${parallel:+, -parallel $parallel}, -fuzzminimizetime $minimizetime): $log"
	before=$(entries "$corpus")
	start=$SECONDS
	run_target "$pkg" "$name" "$log"
	status=$?
	result=ok note=""
	if [ "$interrupted" = 1 ]; then
		result=interrupted
	elif [ $status -ne 0 ]; then
		result=FAIL
		written=$(comm -13 <(sort <<<"$before") <(entries "$corpus" | sort) | sed '/^$/d')
		if [ -z "$written" ] && engine_timeout "$log" "$name"; then
			echo "   the fuzz engine's own deadline (go.dev/issue/75804), no failing input: running it once more"
			log=${log%.log}.retry.log
			run_target "$pkg" "$name" "$log"
			status=$?
			written=$(comm -13 <(sort <<<"$before") <(entries "$corpus" | sort) | sed '/^$/d')
			if [ "$interrupted" = 1 ]; then
				result=interrupted
			elif [ $status -eq 0 ]; then
				result=engine-timeout-retried
			else
				note="engine deadline, then the rerun failed too: "
			fi
		fi
		if [ "$result" = FAIL ]; then
			if [ -n "$written" ]; then
				note+="failing input $corpus/$(head -n 1 <<<"$written"), "
			elif grep -q 'no fuzz tests to fuzz' "$log"; then
				note+="target not built (build tags?), "
			fi
			note+="see $log"
		fi
	elif grep -q 'no fuzz tests to fuzz' "$log"; then
		result=FAIL note="target not built (build tags?), see $log"
	fi
	read -r stall stall_from stall_to < <(fuzz_stall "$log")
	if [ "$stall" -ge "$stall_limit" ] && [ "$result" != interrupted ]; then
		if [ "$result" != FAIL ]; then
			result=FAIL note="see $log"
		fi
		note="stalled: no new executions for ${stall}s (from ${stall_from}s to ${stall_to}s of the run): an input that hangs or is that slow (Go saves no input for it), $note"
	fi
	read -r execs new < <(fuzz_stats "$log")
	elapsed=$((SECONDS - start))
	case $result in
	ok) passed=$((passed + 1)) ;;
	engine-timeout-retried) retried=$((retried + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
	echo "   $result: execs $execs, new interesting $new, ${elapsed}s${note:+ ($note)}"
	rows+=("$pkg	$name	$result	$execs	$new	${elapsed}s")
	if [ -n "$note" ]; then
		notes+=("$pkg $name: $note")
	fi
	if [ "$interrupted" = 1 ]; then
		break
	fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . |
	grep -v -e '^\./vendor/' -e '^\./\.cache/' -e '/testdata/' | sort)

if [ "$targets" -eq 0 ]; then
	echo "no fuzz targets found${only:+ matching FUZZ_TARGETS=$only}" >&2
	exit 1
fi
{
	echo
	echo "fuzz summary: FUZZTIME=$fuzztime, -parallel ${parallel:-default}, -fuzzminimizetime $minimizetime, logs in $logdir"
	printf '%s\n' "PACKAGE	TARGET	RESULT	EXECS	NEW	TIME" "${rows[@]}" | table
	echo "$targets targets: $passed ok, $retried engine-timeout-retried, $failed FAIL"
	if [ ${#notes[@]} -gt 0 ]; then
		printf '  %s\n' "${notes[@]}"
	fi
} | tee "$logdir/summary.txt"
if [ "$interrupted" = 1 ]; then
	exit 130
fi
[ "$failed" -eq 0 ]
