#!/usr/bin/env bash
# make deb-test: builds the .deb (scripts/deb.sh), then in the VM (a real
# kernel with the openvswitch module, bin/vmrun) installs it with dpkg -i
# and checks that
#   - dpctl and upcalld run and print the package's version; man finds
#     dpctl(8); the bash and zsh completions are where bash-completion and
#     zsh look; systemd-analyze verify accepts upcalld@NAME.service;
#   - the unit's ExecStart (with its environment files, as systemd would
#     expand it: the guest has no systemd as PID 1) starts upcalld on
#     system@NAME, which serves upcalld status, dpctl show and /metrics;
#   - a reinstall keeps a changed conffile; dpkg -r removes every file
#     but the conffiles; dpkg --purge removes those and /etc/ovsdp.
#
# The guest's root is the host's, read-only over 9p. To let dpkg write
# (/var/lib/dpkg, /usr, /etc), the guest half loads overlay.ko from the
# VM kernel's modules and mounts an overlay with a tmpfs upper layer over
# that root, then runs the checks chrooted in it: the host is untouched.
#
#   bash scripts/deb-test.sh              build, then run the guest half in the VM
#   bash scripts/deb-test.sh --guest DEB  the guest half (run by the above)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
fail() { echo "deb-test: FAIL: $*" >&2; exit 1; }
log() { echo "deb-test: [${SECONDS}s] $*"; }

if [ "${1:-}" != --guest ] && [ "${1:-}" != --inside ]; then
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
	mount -t proc proc "$r/proc"
	mount --rbind /sys "$r/sys"
	mount --rbind /dev "$r/dev"
	mount -t tmpfs tmpfs "$r/run"
	mount -t tmpfs tmpfs "$r/tmp"
	log "writable root: overlay (tmpfs upper) over the 9p root at $r"
	set +e
	chroot "$r" /bin/bash "$ROOT/scripts/deb-test.sh" --inside "$deb"
	rc=$?
	set -e
	umount -R "$r" 2>/dev/null || umount -l "$r" || true
	umount -l "$w" || true
	exit $rc
fi

# --inside DEB: in the writable root.
deb=$2
dp=debt$$
dp=${dp:0:15}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
[ -f "$deb" ] || fail "no $deb"
pkgver=$(dpkg-deb -f "$deb" Version)
files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$')
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
