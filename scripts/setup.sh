#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for building and testing ovsdp
# (run as root). Idempotent: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pair in \
	qemu-system-x86_64:qemu-system-x86 \
	busybox:busybox-static \
	ovs-dpctl:openvswitch-switch \
	ip:iproute2 \
	ping:iputils-ping \
	arping:iputils-arping \
	socat:socat \
	nc:netcat-openbsd \
	tcpdump:tcpdump \
	man:man-db \
	zsh:zsh \
	dpkg-deb:dpkg \
	objdump:binutils \
	systemd-analyze:systemd \
	systemd-nspawn:systemd-container; do
	cmd=${pair%%:*} pkg=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || [ -x "/sbin/$cmd" ] || need+=("$pkg")
done
# make install-test loads dpctl's completion with bash-completion.
[ -r /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
if [ ${#need[@]} -gt 0 ]; then
	echo "setup: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# ovs-vswitchd must not run: the tests drive datapaths themselves.
if command -v systemctl >/dev/null 2>&1; then
	systemctl stop openvswitch-switch >/dev/null 2>&1 || true
fi
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	echo "setup: go is at /usr/local/go/bin; add it to PATH" >&2
fi
# The kernel for the VM runner (Debian's linux-image, with openvswitch.ko).
if [ -x scripts/vm/fetch-kernel.sh ] || [ -f scripts/vm/fetch-kernel.sh ]; then
	bash scripts/vm/fetch-kernel.sh
fi
