#!/usr/bin/env bash
# make deb: builds bin/ovsdp_VERSION_ARCH.deb with dpkg-deb from what
# `make install` puts in a staging tree (PREFIX=/usr, the unit in
# /lib/systemd/system, zsh completion in vendor-completions as Debian
# packages do), plus a control file, conffiles, md5sums and maintainer
# scripts. Prints the path of the package.
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
fail() { echo "deb: $*" >&2; exit 1; }
for t in dpkg-deb objdump gzip; do command -v $t >/dev/null || fail "$t is missing (run scripts/setup.sh)"; done

# Debian version from git describe: v1.2.3 -> 1.2.3, v1.2.3-4-gHASH ->
# 1.2.3+git4.HASH, no tag -> 0~gitYYYYMMDD.HASH; a dirty tree adds .dirty.
dirty=; git diff --quiet HEAD 2>/dev/null || dirty=.dirty
desc=$(git describe --tags 2>/dev/null || true)
if [[ $desc =~ ^v?([0-9][0-9A-Za-z.~+]*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
	debver=${BASH_REMATCH[1]}+git${BASH_REMATCH[2]}.${BASH_REMATCH[3]}
elif [[ $desc =~ ^v?([0-9][0-9A-Za-z.~+]*)$ ]]; then
	debver=${BASH_REMATCH[1]}
elif [ -z "$desc" ]; then
	debver=0~git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git rev-parse --short HEAD)
else
	fail "tag $desc does not start with a version number"
fi
debver=$debver$dirty
arch=$(dpkg --print-architecture)

stage=$(mktemp -d /tmp/ovsdp-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"
$MAKE -s install DESTDIR="$stage" PREFIX=/usr SYSCONFDIR=/etc SYSTEMDUNITDIR=/lib/systemd/system \
	ZSHCOMPDIR=/usr/share/zsh/vendor-completions >/dev/null
gzip -9n "$stage/usr/share/man/man8/dpctl.8"
doc=$stage/usr/share/doc/ovsdp
install -d "$doc"
install -m 644 README.md "$doc/README.md"
gzip -9nc CHANGELOG.md > "$doc/changelog.gz"
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: ovsdp"
	echo "Source: https://github.com/ovsdp/ovsdp"
	echo
	echo "Files: *"
	echo "Copyright: the ovsdp authors"
	if [ -f LICENSE ]; then
		echo "License: see below"
		sed 's/^$/./; s/^/ /' LICENSE
	else
		echo "License: see the LICENSE file of the source repository"
	fi
} > "$doc/copyright"

# The binaries are dynamically linked against glibc only (cgo for the
# resolver): depend on the newest symbol version they use, as
# dpkg-shlibdeps would.
glibc=$(objdump -T "$stage/usr/bin/dpctl" "$stage/usr/bin/upcalld" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
depends="libc6${glibc:+ (>= $glibc)}"
other=$(objdump -p "$stage/usr/bin/dpctl" "$stage/usr/bin/upcalld" | awk '/NEEDED/ {print $2}' | sort -u | grep -v '^libc\.so\.6$' || true)
[ -z "$other" ] || fail "the binaries need libraries other than libc ($other): add them to Depends"

d=$stage/DEBIAN
install -d "$d"
cat > "$d/control" <<CONTROL
Package: ovsdp
Version: $debver
Architecture: $arch
Maintainer: ovsdp developers <ovsdp@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Recommends: bash-completion
Suggests: openvswitch-switch, prometheus
Section: net
Priority: optional
Homepage: https://github.com/ovsdp/ovsdp
Description: Open vSwitch datapath tools: dpctl and the upcalld daemon
 dpctl controls Open vSwitch datapaths with the commands, flow syntax and
 output of ovs-dpctl: the Linux kernel's openvswitch module (system@NAME)
 and ovsdp's userspace datapath (netdev@NAME).
 .
 upcalld handles a datapath's upcalls (learning switch or ovs-ofctl-style
 rules), installs megaflows, revalidates them and exports Prometheus
 metrics. The systemd unit upcalld@NAME.service runs one daemon for the
 kernel datapath NAME; its options are in /etc/ovsdp.
CONTROL
printf '%s\n' /etc/ovsdp/upcalld.conf /etc/ovsdp/default.rules > "$d/conffiles"
cat > "$d/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
	# An upgrade restarts the running daemons (the kernel's flows keep
	# forwarding meanwhile; the new daemon adopts them).
	if [ -n "$2" ]; then
		systemctl try-restart 'upcalld@*.service' >/dev/null || true
	fi
fi
exit 0
SCRIPT
cat > "$d/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop 'upcalld@*.service' >/dev/null || true
fi
exit 0
SCRIPT
cat > "$d/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
	# Enablement links of instances (systemctl enable upcalld@NAME).
	rm -f /etc/systemd/system/multi-user.target.wants/upcalld@*.service
	rmdir --ignore-fail-on-non-empty /etc/ovsdp 2>/dev/null || true
fi
exit 0
SCRIPT
chmod 755 "$d/postinst" "$d/prerm" "$d/postrm"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$d/md5sums"
chmod 644 "$d/control" "$d/conffiles" "$d/md5sums"

out=bin/ovsdp_${debver}_${arch}.deb
mkdir -p bin
rm -f bin/ovsdp_*.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
