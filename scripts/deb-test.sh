#!/usr/bin/env bash
# make deb-test: builds the .deb (scripts/deb.sh), then in the VM (a real
# kernel with the openvswitch module, bin/vmrun) installs it with dpkg -i
# and checks that
#   - dpctl and upcalld run and print the package's version; man finds
#     dpctl(8); the bash and zsh completions are where bash-completion and
#     zsh look; systemd-analyze verify accepts upcalld@NAME.service;
#   - the unit's ExecStart (with its environment files, as systemd would
#     expand it) starts upcalld on system@NAME, which serves upcalld
#     status, dpctl show and /metrics;
#   - under systemd (PID 1 of a systemd-nspawn container booted from the
#     same tree: the guest's own init is busybox), systemctl start
#     upcalld@NAME runs /usr/bin/upcalld, which serves status and show;
#     reload reaches it (SIGHUP); stop stops it;
#   - a reinstall keeps a changed conffile; dpkg -r removes every file
#     but the conffiles; dpkg --purge removes those and /etc/ovsdp.
#
# The guest's root is the host's, read-only over 9p. To let dpkg write
# (/var/lib/dpkg, /usr, /etc), the guest half loads overlay.ko from the
# VM kernel's modules and mounts an overlay with a tmpfs upper layer over
# that root, then runs the checks chrooted in it, and boots systemd in a
# container on it: the host is untouched.
#
#   bash scripts/deb-test.sh              build, then run the guest half in the VM
#   bash scripts/deb-test.sh --guest DEB  the guest half (run by the above)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
fail() { echo "deb-test: FAIL: $*" >&2; exit 1; }
log() { echo "deb-test: [${SECONDS}s] $*"; }

if [ "${1:-}" != --guest ] && [ "${1:-}" != --inside-install ] && [ "${1:-}" != --inside-remove ] && [ "${1:-}" != --systemd ]; then
	start=$(date +%s)
	deb=$(bash scripts/deb.sh)
	log "built $deb ($(( $(date +%s) - start )) s)"
	[ -x bin/vmrun ] || fail "bin/vmrun is missing (make build)"
	# One VM at a time on this machine.
	waited=$(date +%s)
	flock /tmp/ovsdp-vm.lock bash -c 'echo "deb-test: VM lock after $(( $(date +%s) - $1 )) s"; t=$(date +%s)
		"$2/bin/vmrun" -vm always -timeout 10m /bin/bash "$2/scripts/deb-test.sh" --guest "$3" || exit
		echo "deb-test: VM run $(( $(date +%s) - t )) s"' _ "$waited" "$ROOT" "$ROOT/$deb"
	log "ok ($(( $(date +%s) - start )) s in all)"
	exit 0
fi

if [ "$1" = --guest ]; then
	# In the guest, chrooted in the read-only host root: build the
	# writable overlay and re-run this script inside it.
	deb=$2
	[ "${OVSDP_VM_GUEST:-}" = 1 ] || [ "${OVSDP_DEB_TEST_HERE:-}" = 1 ] ||
		fail "--guest runs in the VM (or set OVSDP_DEB_TEST_HERE=1 on a disposable machine)"
	if [ ! -d /sys/module/overlay ]; then
		cache=${OVSDP_VM_CACHE:-/var/cache/ovsdp-vm}
		ko=$(find "$cache/$(cat "$cache/current")/modules" -name overlay.ko | head -1)
		[ -n "$ko" ] || fail "no overlay.ko under $cache (scripts/vm/fetch-kernel.sh)"
		insmod "$ko" || fail "insmod $ko"
	fi
	w=$(mktemp -d /tmp/debtest.XXXXXX)
	mount -t tmpfs tmpfs "$w"
	mkdir -p "$w/upper" "$w/work" "$w/root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$w/upper,workdir=$w/work" "$w/root" ||
		fail "mount overlay over / (9p) failed"
	r=$w/root
	log "writable root: overlay (tmpfs upper) over the 9p root at $r"
	# inroot PHASE: this script's PHASE chrooted in the overlay, with
	# /proc, /sys, /dev and fresh /run and /tmp (unmounted afterwards, so
	# that systemd-nspawn finds a plain tree).
	inroot() {
		mount -t proc proc "$r/proc"
		mount --rbind /sys "$r/sys"
		mount --rbind /dev "$r/dev"
		mount -t tmpfs tmpfs "$r/run"
		mount -t tmpfs tmpfs "$r/tmp"
		set +e
		chroot "$r" /bin/bash "$ROOT/scripts/deb-test.sh" "$1" "$deb"
		local rc=$?
		set -e
		for m in tmp run dev sys proc; do umount -R "$r/$m" 2>/dev/null || umount -l "$r/$m"; done
		return $rc
	}
	inroot --inside-install || exit
	# systemd as PID 1 of a container booted from the overlay: there it
	# starts, reloads and stops upcalld@NAME. What the host root enables
	# and would start in a container is masked: Open vSwitch's daemons
	# (they would take the datapath) and gettys.
	command -v systemd-nspawn >/dev/null || fail "systemd-nspawn is missing (systemd-container; run scripts/setup.sh)"
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
	for u in openvswitch-switch ovs-vswitchd ovsdb-server ovs-record-hostname systemd-networkd-wait-online console-getty getty@tty1 postgresql postgresql@15-main; do
		ln -sf /dev/null "$r/etc/systemd/system/$u.service"
	done
	cat > "$r/etc/systemd/system/ovsdp-deb-test.service" <<UNIT
[Unit]
Description=ovsdp deb-test: upcalld@NAME under systemd
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/bin/bash $ROOT/scripts/deb-test.sh --systemd $deb
StandardOutput=journal+console
StandardError=journal+console
UNIT
	mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
	ln -sf /etc/systemd/system/ovsdp-deb-test.service "$r/etc/systemd/system/multi-user.target.wants/"
	log "booting systemd in a container on the overlay (systemd-nspawn -b)"
	t=$SECONDS
	timeout 300 systemd-nspawn -q -D "$r" --register=no --keep-unit --link-journal=no \
		--capability=CAP_NET_ADMIN,CAP_NET_RAW -b </dev/null >"$w/nspawn.log" 2>&1 || true
	cat "$r/run-deb-test.log" 2>/dev/null || true
	if [ "$(cat "$r/run-deb-test.rc" 2>/dev/null)" != 0 ]; then
		grep -a -i 'fail\|error' "$w/nspawn.log" | tail -20 >&2
		fail "upcalld@NAME under systemd failed (status '$(cat "$r/run-deb-test.rc" 2>/dev/null)')"
	fi
	log "container powered off after $((SECONDS - t)) s"
	rm -f "$r/etc/systemd/system/multi-user.target.wants/ovsdp-deb-test.service" "$r/etc/systemd/system/ovsdp-deb-test.service" "$r/run-deb-test.rc" "$r/run-deb-test.log"
	inroot --inside-remove || exit
	umount -l "$r" || true
	umount -l "$w" || true
	exit 0
fi

if [ "$1" = --systemd ]; then
	# In the container, run by ovsdp-deb-test.service; it powers the
	# container off and leaves its status in /run-deb-test.rc.
	echo 1 > /run-deb-test.rc
	exec >/run-deb-test.log 2>&1
	trap 'systemctl poweroff --no-block' EXIT
	dp=debs$$
	dp=${dp:0:15}
	u=upcalld@$dp.service
	echo 'UPCALLD_ARGS="--handlers 1 --metrics 127.0.0.1:9478"' > /etc/ovsdp/$dp.conf
	systemctl start "$u" || { systemctl status --no-pager "$u"; fail "systemctl start $u"; }
	ok=0
	for i in $(seq 100); do
		if /usr/bin/upcalld status --datapath system@$dp >/tmp/status 2>&1; then ok=1; break; fi
		sleep 0.2
	done
	[ $ok = 1 ] || { systemctl status --no-pager "$u"; journalctl -u "$u" --no-pager | tail; fail "upcalld status under systemd: $(cat /tmp/status)"; }
	[ "$(systemctl is-active "$u")" = active ] || fail "$u is not active"
	pid=$(systemctl show -p MainPID --value "$u")
	# (Its /proc/PID/exe names the overlay's layer, not the path: check the
	# command line and the file.)
	argv0=$(tr '\0' '\n' </proc/$pid/cmdline | head -1)
	[ "$argv0" = /usr/bin/upcalld ] || fail "$u runs $argv0"
	cmp -s /proc/$pid/exe /usr/bin/upcalld || fail "$u's executable is not /usr/bin/upcalld"
	/usr/bin/dpctl show system@$dp | grep -q "^system@$dp:" || fail "dpctl show system@$dp under systemd"
	systemctl reload "$u" || fail "systemctl reload $u"
	for i in $(seq 50); do journalctl -u "$u" --no-pager | grep -q 'reloading rules' && break; sleep 0.2; done
	journalctl -u "$u" --no-pager | grep -q 'reloading rules' || fail "systemctl reload did not reach upcalld"
	[ "$(systemctl is-active "$u")" = active ] || fail "$u died on reload"
	systemctl stop "$u" || fail "systemctl stop $u"
	[ "$(systemctl is-active "$u")" != active ] || fail "$u still active after stop"
	/usr/bin/dpctl del-dp system@$dp || fail "dpctl del-dp system@$dp"
	rm -f /etc/ovsdp/$dp.conf
	log "under systemd: systemctl start $u (MainPID $pid, /usr/bin/upcalld), upcalld status, dpctl show, systemctl reload (SIGHUP logged), systemctl stop"
	echo 0 > /run-deb-test.rc
	exit 0
fi

# --inside-install DEB, --inside-remove DEB: chrooted in the writable root.
deb=$2
dp=debt$$
dp=${dp:0:15}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
[ -f "$deb" ] || fail "no $deb"
pkgver=$(dpkg-deb -f "$deb" Version)
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
if [ "$1" = --inside-install ]; then
for f in $files; do [ ! -e "$f" ] || fail "$f exists before the install"; done

# man-db's trigger re-indexes every man page after each dpkg run, which
# takes minutes in the emulated guest; man -w finds pages without the
# index. (Debian's man-db runs the trigger only while this file exists.)
rm -f /var/lib/man-db/auto-update
log "dpkg -i $(basename "$deb")"
dpkg -i "$deb" || fail "dpkg -i"
[ "$(dpkg-query -W -f '${Status} ${Version}' ovsdp)" = "install ok installed $pkgver" ] || fail "dpkg-query: $(dpkg-query -W -f '${Status} ${Version}' ovsdp)"
for b in dpctl upcalld; do
	v=$(/usr/bin/$b --version) || fail "$b --version"
	log "$v"
	case $v in "$b "*"(commit "*) ;; *) fail "$b --version printed '$v'" ;; esac
done
[ "$(man -w dpctl)" = /usr/share/man/man8/dpctl.8.gz ] || fail "man -w dpctl: $(man -w dpctl 2>&1)"
MANWIDTH=80 man 8 dpctl 2>/dev/null | grep -q dump-flows || fail "man dpctl does not render"
got=$(bash --norc -c '. /usr/share/bash-completion/bash_completion; __load_completion dpctl && complete -p dpctl')
[ "$got" = "complete -F _dpctl dpctl" ] || fail "bash-completion: '$got'"
# zsh: compinit registers the #compdef line of a file on the default
# fpath (a full compinit scan is slow in the emulated guest).
zsh -fc 'print -l $fpath' | grep -qx /usr/share/zsh/vendor-completions || fail "vendor-completions is not on zsh's fpath"
[ "$(head -1 /usr/share/zsh/vendor-completions/_dpctl)" = "#compdef dpctl" ] || fail "_dpctl lacks #compdef dpctl"
got=$(zsh -fc 'autoload -Uz +X _dpctl && whence -w _dpctl')
[ "$got" = "_dpctl: function" ] || fail "zsh does not autoload _dpctl from its fpath: '$got'"
unit=/lib/systemd/system/upcalld@.service
[ -f "$unit" ] || fail "no $unit"
cp "$unit" "/tmp/upcalld@$dp.service"
systemd-analyze verify "/tmp/upcalld@$dp.service" || fail "systemd-analyze verify upcalld@$dp.service"
log "man page, completions and unit in place; systemd-analyze verify passes"

# Start the daemon as upcalld@$dp would: the environment files, then
# ExecStart with %i and $VARS expanded (systemd splits $VAR on blanks,
# as the shell does unquoted).
echo 'UPCALLD_ARGS="--handlers 1 --metrics 127.0.0.1:9477"' > /etc/ovsdp/$dp.conf
line=$(sed -n 's/^ExecStart=//p' "$unit" | sed "s/%i/$dp/g")
[ -n "$line" ] || fail "no ExecStart"
mkdir -p /run/ovsdp # RuntimeDirectory=ovsdp
(
	set -a
	. /etc/ovsdp/upcalld.conf
	. /etc/ovsdp/$dp.conf
	set +a
	eval "args=($line)"
	log "ExecStart: ${args[*]}"
	exec "${args[@]}" >/tmp/upcalld.log 2>&1
) &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	/usr/bin/dpctl del-dp system@$dp 2>/dev/null || true
}
trap cleanup EXIT
ok=0
for i in $(seq 100); do
	if /usr/bin/upcalld status --datapath system@$dp >/tmp/status 2>&1; then ok=1; break; fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.2
done
[ $ok = 1 ] || { cat /tmp/upcalld.log >&2; fail "upcalld status --datapath system@$dp: $(cat /tmp/status)"; }
sed 's/^/    /' /tmp/status
show=$(/usr/bin/dpctl show system@$dp) || fail "dpctl show system@$dp"
echo "$show" | sed 's/^/    /'
echo "$show" | grep -q "^system@$dp:" || fail "dpctl show does not show system@$dp"
exec 3<>/dev/tcp/127.0.0.1/9477 || fail "no metrics on 127.0.0.1:9477"
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
metrics=$(cat <&3)
exec 3>&-
bi=$(echo "$metrics" | grep '^upcalld_build_info{') || fail "no upcalld_build_info on /metrics"
log "$bi"
echo "$bi" | grep -q ' 1$' || fail "upcalld_build_info is not 1"
kill -TERM "$pid"
wait "$pid" || fail "upcalld exited with $? on SIGTERM: $(tail -5 /tmp/upcalld.log)"
/usr/bin/dpctl del-dp system@$dp || fail "dpctl del-dp system@$dp"
trap - EXIT
rm -f /etc/ovsdp/$dp.conf
log "upcalld@$dp's ExecStart served status, show and metrics; SIGTERM stopped it"
exit 0
fi

# --inside-remove

# Conffiles: a changed one survives a reinstall and dpkg -r.
echo '# changed by the admin' >> /etc/ovsdp/default.rules
dpkg -i "$deb" >/dev/null || fail "reinstall"
grep -q 'changed by the admin' /etc/ovsdp/default.rules || fail "reinstall replaced the changed conffile"
dpkg -r ovsdp >/dev/null || fail "dpkg -r"
[ "$(dpkg-query -W -f '${Status}' ovsdp)" = "deinstall ok config-files" ] || fail "after dpkg -r: $(dpkg-query -W -f '${Status}' ovsdp)"
for f in $files; do
	case $f in
	/etc/ovsdp/*) [ -f "$f" ] || fail "dpkg -r removed the conffile $f" ;;
	*) [ ! -e "$f" ] || fail "dpkg -r left $f" ;;
	esac
done
grep -q 'changed by the admin' /etc/ovsdp/default.rules || fail "dpkg -r lost the change to default.rules"
dpkg --purge ovsdp >/dev/null || fail "dpkg --purge"
dpkg-query -W ovsdp >/dev/null 2>&1 && fail "dpkg still knows ovsdp after --purge"
for f in $files; do [ ! -e "$f" ] || fail "dpkg --purge left $f"; done
[ ! -e /etc/ovsdp ] || fail "dpkg --purge left /etc/ovsdp: $(ls -A /etc/ovsdp)"
log "reinstall kept a changed conffile; dpkg -r kept only the conffiles; --purge removed them and /etc/ovsdp"
