#!/usr/bin/env bash
# make bench: runs every benchmark of the project, each with its baseline
# measured in the same run, and writes bench/REPORT.md and its charts
# (go run ./bench/report). As root: the AF_PACKET benchmarks need it, and
# the kernel benchmarks (genl, dpctl vs ovs-dpctl) run in the VM
# (bin/vmrun) when the host has no openvswitch module.
#
# Environment: BENCHTIME (host benchmarks, default 200ms), SCALE_COUNT
# (runs of the table scale sweeps, default 1), COUNT (runs per
# benchmark; the report shows each median with its confidence interval;
# default 6, the fewest runs whose median has a 95% interval: fewer give
# the runs' range at a lower confidence, 75% for 3), BENCH_LARGE=1 to add the 100,000
# flow genl and dpctl runs (default: skipped; about half an hour under TCG), BENCH_VM=0 to skip the VM, VM_VSOVS_COUNT (runs of upcalld vs ovs-vswitchd in the VM, default 3: one run has no interval, so its verdicts could only be unclear), SAT_ROUNDS and VM_SAT_ROUNDS (rounds of the saturation runs on the host, default 6, and in the VM, default 3), BENCH_KEEP=DIR to keep the raw
# outputs in DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-200ms}
COUNT=${COUNT:-6}
BENCH_LARGE=${BENCH_LARGE:-0}
BENCH_VM=${BENCH_VM:-1}
VM_VSOVS_COUNT=${VM_VSOVS_COUNT:-3}
SAT_ROUNDS=${SAT_ROUNDS:-6}
VM_SAT_ROUNDS=${VM_SAT_ROUNDS:-3}
OUT=${BENCH_OUT:-bench/REPORT.md}

raw=$(mktemp -d /tmp/ovsdp-bench.XXXXXX)
cleanup() {
	if [ -n "${BENCH_KEEP:-}" ]; then
		mkdir -p "$BENCH_KEEP" && cp -r "$raw"/. "$BENCH_KEEP"/ && echo "bench: raw outputs kept in $BENCH_KEEP"
	fi
	rm -rf "$raw"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

steps=$raw/steps.txt
: >"$steps"
# step NAME STATUS DETAIL records how a step ended (read by the report).
step() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$steps"; }
say() { echo "bench: $(date +%H:%M:%S) $*"; }

# The machine, and its load before anything runs.
{
	echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cores: $(nproc) online ($(grep -c ^processor /proc/cpuinfo) total)"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "kernel: $(uname -srm)"
	echo "OS: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "Go: $($GO version | sed 's/^go version //')"
	# The peers the report compares with: Open vSwitch's tools (the VM
	# runs the host's binaries) and the Go libraries used as baselines.
	ovs="not installed"
	if command -v ovs-dpctl >/dev/null; then
		ovs="$(ovs-dpctl --version 2>/dev/null | sed -n '1s/^.*) //p')"
		pkgv=$(dpkg-query -W -f '${Version}' openvswitch-switch 2>/dev/null) && ovs="$ovs (Debian openvswitch-switch $pkgv)"
	fi
	echo "peers: Open vSwitch $ovs; $($GO list -m -f '{{.Path}} {{.Version}}' github.com/google/gopacket 2>/dev/null)"
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (work tree has uncommitted changes)')"
	echo "settings: -benchtime $BENCHTIME -count $COUNT (host); VM benchmarks once each, but upcalld@vm 3 runs and upcalld vs ovs-vswitchd $VM_VSOVS_COUNT"
} >"$raw/machine.txt"
cat "$raw/machine.txt" | sed 's/^/bench: /'
start=$(date +%s)

say "building"
if ! make -s build >"$raw/build.log" 2>&1; then
	cat "$raw/build.log"
	step build fail "make build failed"
fi

# failed_pkgs lists the packages a go test -json run reported as failed.
failed_pkgs() {
	grep '"Action":"fail"' "$1" | grep -v '"Test"' | sed 's/.*"Package":"\([^"]*\)".*/\1/' | sed "s|^github.com/ovsdp/ovsdp/||" | sort -u | tr '\n' ' '
}

# 1. Host benchmarks: every package except the daemon's (below).
pkgs=$($GO list ./... | grep -v '/cmd/upcalld/internal/daemon$')
say "host benchmarks (-benchtime $BENCHTIME -count $COUNT)"
if [ "$(id -u)" != 0 ]; then
	step host-root warn "not root: the AF_PACKET benchmarks fail"
fi
# BenchmarkTableScale's sweeps run on their own, below.
scale_subs='^BenchmarkTableScale$/^(flows|microflows)='
$GO test -run '^$' -skip "$scale_subs" -bench . -benchmem -benchtime "$BENCHTIME" -count "$COUNT" -json $pkgs >"$raw/host.json" 2>"$raw/host.err"
rc=$?
if [ $rc -eq 0 ]; then
	step host ok ""
else
	step host fail "go test exit $rc; failed: $(failed_pkgs "$raw/host.json")$(head -c 300 "$raw/host.err" | tr '\n\t' '  ')"
	for p in $(failed_pkgs "$raw/host.json"); do
		step "$p" fail "go test -bench failed in $p (see its output)"
	done
fi

# 1a. The cache-hit pipeline's instructions per packet under cachegrind
# (issue 17): the single-run figure and the differential one beside it
# (the report judges the goal on the first, the script's original
# method). About a minute under valgrind.
say "pipeline instructions (cachegrind)"
if ! command -v valgrind >/dev/null; then
	step userdp@instructions skip "valgrind is not installed"
elif scripts/pipeline-instructions.sh >"$raw/userdp@instructions.txt" 2>"$raw/instructions.err"; then
	step userdp@instructions ok ""
else
	step userdp@instructions fail "$(head -c 300 "$raw/instructions.err" | tr '\n\t' '  ')"
	rm -f "$raw/userdp@instructions.txt"
fi

# 1b. How the megaflow table's cost grows (BenchmarkTableScale's sweeps
# over 1k..1M megaflows and 1..1M microflows): tables of a million flows
# take seconds each to build, so SCALE_COUNT runs (default 1: the charts
# have no interval then).
SCALE_COUNT=${SCALE_COUNT:-1}
say "table scale sweeps (-count $SCALE_COUNT)"
if $GO test -run '^$' -bench "$scale_subs" -benchtime "$BENCHTIME" -count "$SCALE_COUNT" -timeout 30m -json ./userdp >"$raw/scale.json" 2>"$raw/scale.err"; then
	step userdp-scale ok ""
else
	step userdp-scale fail "go test failed: $(head -c 300 "$raw/scale.err" | tr '\n\t' '  ')"
fi

# 2. The upcall daemon on the userspace datapath: a fixed number of
# upcalls per run (its benchmarks size their data by b.N).
say "upcalld benchmarks (20000 upcalls per run)"
# A hung run is cut off at 4 minutes (go test's -timeout does not cover
# benchmarks); the runs already done still count.
if timeout -k 10 240 $GO test -run '^$' -bench . -benchmem -benchtime 20000x -count "$COUNT" -json ./cmd/upcalld/internal/daemon >"$raw/upcalld.json" 2>"$raw/upcalld.err"; then
	step cmd/upcalld/internal/daemon ok ""
else
	step cmd/upcalld/internal/daemon fail "go test failed: $(grep -o '"Output":"[^"]*\(panic\|signal\|timed out\|FAIL\)[^"]*' "$raw/upcalld.json" | sed 's/"Output":"//; s/\\[nt]/ /g' | head -3 | tr '\n' ' ')$(head -c 300 "$raw/upcalld.err" | tr '\n\t' '  ') (results of the runs that finished are used)"
fi

# 2b. upcalld against ovs-vswitchd on the userspace datapath (issue 17.3):
# the same new-flow traffic through upcalld's netdev@ and a private
# ovs-vswitchd's datapath_type=netdev, on the host (as root, with Debian's
# openvswitch-switch installed).
say "upcalld vs ovs-vswitchd, userspace datapath (-count $COUNT)"
if ! $GO test -c -tags integration -o "$raw/daemon-host.test" ./cmd/upcalld/internal/daemon 2>"$raw/build-daemon-host.err"; then
	step vsovs@host fail "building the test binary failed: $(head -c 300 "$raw/build-daemon-host.err" | tr '\n\t' '  ')"
elif (cd cmd/upcalld/internal/daemon && timeout -k 10 900 "$raw/daemon-host.test" -test.run '^$' -test.bench '^BenchmarkIntegrationVsOVS$/^netdev$' -test.benchtime 1x -test.count "$COUNT" >"$raw/vsovs@host.txt" 2>&1); then
	step vsovs@host ok ""
else
	step vsovs@host fail "exit $?: $(grep -E 'FAIL|Error|error' "$raw/vsovs@host.txt" | head -3 | tr '\n\t' '  ')"
fi

# 2c. The same past saturation (issue 17): BenchmarkIntegrationVsOVSSat,
# SAT_ROUNDS rounds of one run of each switch (upcalld, then
# ovs-vswitchd, per workload), so that the report pairs them by round.
say "upcalld vs ovs-vswitchd past saturation, userspace datapath ($SAT_ROUNDS rounds)"
if [ ! -x "$raw/daemon-host.test" ]; then
	step vssat@host fail "building the test binary failed: $(head -c 300 "$raw/build-daemon-host.err" | tr '\n\t' '  ')"
else
	satrc=0
	for _ in $(seq "$SAT_ROUNDS"); do
		(cd cmd/upcalld/internal/daemon && timeout -k 10 120 "$raw/daemon-host.test" -test.run '^$' -test.bench '^BenchmarkIntegrationVsOVSSat$/^netdev$' -test.benchtime 1x -test.count 1 >>"$raw/vssat@host.txt" 2>&1) || satrc=$?
	done
	if [ $satrc = 0 ]; then
		step vssat@host ok ""
	else
		step vssat@host fail "exit $satrc: $(grep -E 'FAIL|Error|error' "$raw/vssat@host.txt" | head -3 | tr '\n\t' '  ') (results of the rounds that finished are used)"
	fi
fi

# 3. Kernel benchmarks, in one VM boot (or directly with a host module):
# genl's flow install/dump, the kernel's conntrack setup rate and memory
# per connection beside ours, dpctl vs ovs-dpctl at 10k (and 100k) flows,
# the upcall daemon on system@ and netdev@ in the same guest, and upcalld
# against ovs-vswitchd on system@ (once: TCG makes it slow).
vm_steps="genl@vm genl@vm-ct cmd/dpctl@10k upcalld@vm vsovs@vm vssat@vm"
vm_timeout=30m
if [ "$BENCH_LARGE" = 1 ]; then
	vm_steps="$vm_steps genl@100k cmd/dpctl@100k"
	vm_timeout=90m
else
	for s in genl@100k cmd/dpctl@100k; do
		step $s skipped "BENCH_LARGE=0 (100,000 flows take several minutes per tool under TCG; BENCH_LARGE=1 runs them)"
	done
fi
if [ "$BENCH_VM" != 1 ]; then
	for s in $vm_steps; do step "$s" skipped "BENCH_VM=0"; done
elif [ ! -x bin/vmrun ]; then
	for s in $vm_steps; do step "$s" fail "bin/vmrun was not built"; done
else
	say "kernel benchmarks in the VM ($vm_steps)"
	ok=1
	for p in genl cmd/dpctl cmd/upcalld/internal/daemon; do
		if ! $GO test -c -tags integration -o "$raw/$(basename $p).test" "./$p" 2>"$raw/build-$(basename $p).err"; then
			ok=0
			step "vm-build-$(basename $p)" fail "$(head -c 300 "$raw/build-$(basename $p).err" | tr '\n\t' '  ')"
		fi
	done
	cat >"$raw/vm.sh" <<EOF
#!/bin/sh
# Runs in the guest (or directly when the host has the module).
cd "$ROOT/genl" && "$raw/genl.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationFlows\$' -test.benchtime 1x -test.benchmem >"$raw/genl@vm.txt" 2>&1
echo "genl@vm \$?" >>"$raw/vm-status"
cd "$ROOT/genl" && "$raw/genl.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationCTSetup\$' -test.benchtime 1x >"$raw/genl@vm-ct.txt" 2>&1
echo "genl@vm-ct \$?" >>"$raw/vm-status"
cd "$ROOT/cmd/dpctl" && DPCTL_BULK=10000 "$raw/dpctl.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationFlows\$' -test.benchtime 1x >"$raw/cmd_dpctl@10k.txt" 2>&1
echo "cmd/dpctl@10k \$?" >>"$raw/vm-status"
cd "$ROOT/cmd/upcalld/internal/daemon" && "$raw/daemon.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationUpcalls\$' -test.benchtime 2000x -test.count 3 >"$raw/upcalld@vm.txt" 2>&1
echo "upcalld@vm \$?" >>"$raw/vm-status"
cd "$ROOT/cmd/upcalld/internal/daemon" && "$raw/daemon.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationVsOVS\$/^system\$' -test.benchtime 1x -test.count $VM_VSOVS_COUNT >"$raw/vsovs@vm.txt" 2>&1
echo "vsovs@vm \$?" >>"$raw/vm-status"
satrc=0
for _ in \$(seq $VM_SAT_ROUNDS); do
	cd "$ROOT/cmd/upcalld/internal/daemon" && "$raw/daemon.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationVsOVSSat\$/^system\$' -test.benchtime 1x -test.count 1 >>"$raw/vssat@vm.txt" 2>&1 || satrc=\$?
done
echo "vssat@vm \$satrc" >>"$raw/vm-status"
if [ "$BENCH_LARGE" = 1 ]; then
	cd "$ROOT/genl" && GENL_BENCH_FLOWS=100000 "$raw/genl.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationFlows\$' -test.benchtime 1x -test.benchmem >"$raw/genl@100k.txt" 2>&1
	echo "genl@100k \$?" >>"$raw/vm-status"
	cd "$ROOT/cmd/dpctl" && DPCTL_BULK=100000 "$raw/dpctl.test" -test.run '^\$' -test.bench '^BenchmarkIntegrationFlows\$' -test.benchtime 1x >"$raw/cmd_dpctl@100k.txt" 2>&1
	echo "cmd/dpctl@100k \$?" >>"$raw/vm-status"
fi
EOF
	if [ $ok = 1 ]; then
		# vm.sh's directory (the raw outputs) is shared read-write with the
		# guest, as a program's directory always is.
		chmod +x "$raw/vm.sh"
		# One VM at a time on this machine: wait for whoever holds the VM
		# lock (wrap other vmrun uses in the same flock to serialise them;
		# never make bench itself: the lock it held would be inherited
		# here, and this flock would wait for it for ever).
		lock=""
		command -v flock >/dev/null && lock="flock /tmp/ovsdp-vm.lock"
		$lock bin/vmrun -timeout "$vm_timeout" "$raw/vm.sh" >"$raw/vm.log" 2>&1
		vmrc=$?
		for s in $vm_steps; do
			st=$(sed -n "s|^$s ||p" "$raw/vm-status" 2>/dev/null)
			f=$raw/$(echo "$s" | tr / _).txt
			if [ -z "$st" ]; then
				step "$s" fail "the VM run ended before it (vmrun exit $vmrc: $(grep -iE 'timeout|timed out|killed|error' "$raw/vm.log" | tail -2 | tr '\n\t' '  ')$(tail -1 "$raw/vm.log" | tr '\n\t' '  '))"
			elif [ "$st" = 0 ]; then
				step "$s" ok ""
			else
				step "$s" fail "exit $st: $(grep -E 'FAIL|---|Error|error' "$f" | head -3 | tr '\n\t' '  ')"
			fi
		done
	else
		for s in $vm_steps; do step "$s" fail "building the test binaries failed"; done
	fi
fi

say "writing $OUT"
echo "duration: $(($(date +%s) - start)) s" >>"$raw/machine.txt"
$GO run ./bench/report -in "$raw" -out "$OUT"
