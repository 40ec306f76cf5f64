#!/usr/bin/env bash
# fetch-kernel.sh: prepare everything the ovsdp VM runner (testenv/vmrun)
# needs to boot Debian's kernel with the openvswitch module under QEMU.
#
#  * installs qemu-system-x86, busybox-static and openvswitch-switch (for the
#    reference ovs-dpctl) and iputils-ping when they are missing;
#  * downloads the kernel image package that Debian's linux-image-amd64
#    currently depends on and extracts vmlinuz and the kernel modules into
#    $OVSDP_VM_CACHE (default /var/cache/ovsdp-vm).
#
# Idempotent: a second run with everything in place does no network work.
# Layout of the cache afterwards:
#   $OVSDP_VM_CACHE/current            -> name of the kernel package in use
#   $OVSDP_VM_CACHE/<pkg>/vmlinuz       the kernel
#   $OVSDP_VM_CACHE/<pkg>/modules/<ver>/ the extracted /lib/modules tree
#   $OVSDP_VM_CACHE/<pkg>/release       the kernel release (uname -r)
set -euo pipefail

cache="${OVSDP_VM_CACHE:-/var/cache/ovsdp-vm}"
export DEBIAN_FRONTEND=noninteractive

log() { echo "fetch-kernel: $*" >&2; }
die() { echo "fetch-kernel: error: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get install and $cache need it)"
command -v apt-get >/dev/null || die "apt-get not found: this script supports Debian/Ubuntu only"

updated=0
apt_update() {
	if [ "$updated" -eq 0 ]; then
		log "apt-get update"
		apt-get update -qq >&2 || die "apt-get update failed"
		updated=1
	fi
}

# Host packages: QEMU, a static busybox for the initramfs, and the
# reference ovs-dpctl (openvswitch-switch) that tests compare against.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
[ -x /usr/bin/ovs-dpctl ] || need+=(openvswitch-switch)
command -v ping >/dev/null || need+=(iputils-ping)
if [ "${#need[@]}" -gt 0 ]; then
	apt_update
	log "apt-get install ${need[*]}"
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 || die "apt-get install ${need[*]} failed"
fi
# openvswitch-switch's postinst may start ovs-vswitchd/ovsdb-server on hosts
# with systemd; they are harmless but not needed here.

# Resolve the kernel package: linux-image-amd64 depends on linux-image-X-amd64.
resolve_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
pkg="$(resolve_pkg || true)"
if [ -z "$pkg" ]; then
	apt_update
	pkg="$(resolve_pkg || true)"
fi
[ -n "$pkg" ] || die "cannot resolve the kernel package that linux-image-amd64 depends on (apt-cache depends linux-image-amd64)"

dir="$cache/$pkg"
if [ -f "$dir/.complete" ]; then
	log "cached: $dir"
else
	log "fetching $pkg into $dir"
	mkdir -p "$cache"
	tmp="$(mktemp -d "$cache/.fetch.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download "$pkg" >&2) || {
		apt_update
		(cd "$tmp" && apt-get download "$pkg" >&2) || die "apt-get download $pkg failed"
	}
	deb="$(ls "$tmp"/*.deb | head -1)"
	mkdir -p "$tmp/x"
	dpkg-deb -x "$deb" "$tmp/x"
	vmlinuz="$(ls "$tmp"/x/boot/vmlinuz-* | head -1)"
	[ -f "$vmlinuz" ] || die "no /boot/vmlinuz-* in $deb"
	release="${vmlinuz##*/vmlinuz-}"
	[ -d "$tmp/x/lib/modules/$release" ] || die "no /lib/modules/$release in $deb"
	[ -n "$(find "$tmp/x/lib/modules/$release" -name 'openvswitch.ko*' -print -quit)" ] ||
		die "$deb has no openvswitch module"
	rm -rf "$dir"
	mkdir -p "$dir/modules"
	mv "$vmlinuz" "$dir/vmlinuz"
	mv "$tmp/x/lib/modules/$release" "$dir/modules/$release"
	echo "$release" >"$dir/release"
	echo "$pkg" >"$dir/package"
	touch "$dir/.complete"
	rm -rf "$tmp"
	trap - EXIT
fi
echo "$pkg" >"$cache/current.tmp" && mv "$cache/current.tmp" "$cache/current"
log "ready: kernel $(cat "$dir/release") in $dir"
