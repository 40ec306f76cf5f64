# Sourced by scripts/demo.sh: a geneve tunnel between two datapaths.
#
# tunnel_demo A B: datapath A (system@ in the VM; netdev@ elsewhere) in
# namespace ovsdemo-ta and the userspace datapath B in ovsdemo-tb, joined
# by a veth "underlay" (10.90.0.1 - 10.90.0.2), each with a geneve port
# and a port to a host of its own (ovsdemo-th1 192.168.90.1 behind A,
# ovsdemo-th2 192.168.90.2 behind B). Each side's flows put the packets
# from its host into the tunnel with a Geneve option, and take from the
# tunnel only what matches the tunnel key the other side sends; ping
# crosses both ways and dump-flows shows the decapsulated tunnel keys.
# tunnel_teardown removes it all (demo.sh's cleanup calls it too).

TUN_NS=(ovsdemo-ta ovsdemo-tb ovsdemo-th1 ovsdemo-th2)
tun_dps=()

tunnel_teardown() {
	local d n p
	for d in "${tun_dps[@]}"; do
		ip netns exec "${d%%|*}" "$DPCTL" del-dp "${d#*|}" >/dev/null 2>&1 || true
	done
	tun_dps=()
	for n in "${TUN_NS[@]}"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do
			kill "$p" 2>/dev/null || true
		done
		ip netns del "$n" 2>/dev/null || true
	done
}

tunnel_demo() {
	local a=$1 b=$2 n
	section "6. A geneve tunnel between $a and $b"
	tunnel_teardown
	for n in "${TUN_NS[@]}"; do
		ip netns add "$n"
		ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
		ip netns exec "$n" ip link set lo up
	done
	ip link add ul netns ovsdemo-ta type veth peer name ul netns ovsdemo-tb
	ip link add eth0 netns ovsdemo-th1 type veth peer name hp netns ovsdemo-ta
	ip link add eth0 netns ovsdemo-th2 type veth peer name hp netns ovsdemo-tb
	ip netns exec ovsdemo-ta ip addr add 10.90.0.1/24 dev ul
	ip netns exec ovsdemo-tb ip addr add 10.90.0.2/24 dev ul
	ip netns exec ovsdemo-th1 ip addr add 192.168.90.1/24 dev eth0
	ip netns exec ovsdemo-th2 ip addr add 192.168.90.2/24 dev eth0
	for n in "${TUN_NS[@]}"; do
		ip netns exec "$n" sh -c 'for l in $(ls /sys/class/net); do ip link set "$l" up; done'
	done
	# Room for the outer headers on the 1500-byte underlay.
	ip netns exec ovsdemo-th1 ip link set eth0 mtu 1400
	ip netns exec ovsdemo-th2 ip link set eth0 mtu 1400
	echo "underlay ul: 10.90.0.1 (ovsdemo-ta) - 10.90.0.2 (ovsdemo-tb); hosts 192.168.90.1 (th1, behind $a), 192.168.90.2 (th2, behind $b)"

	local side dp ns self peer
	for side in "$a|ovsdemo-ta|10.90.0.1|10.90.0.2" "$b|ovsdemo-tb|10.90.0.2|10.90.0.1"; do
		IFS='|' read -r dp ns self peer <<<"$side"
		sub "$dp in namespace $ns: a port to its host and a geneve port"
		run ip netns exec "$ns" "$DPCTL" add-dp "$dp"
		tun_dps+=("$ns|$dp")
		run ip netns exec "$ns" "$DPCTL" add-if "$dp" hp
		run ip netns exec "$ns" "$DPCTL" add-if "$dp" gnv0,type=geneve
		local any='eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=00:00:00:00:00:00/00:00:00:00:00:00)'
		local t
		for t in 'eth_type(0x0806),arp(sip=0.0.0.0/0.0.0.0)' 'eth_type(0x0800),ipv4(src=0.0.0.0/0.0.0.0)'; do
			run ip netns exec "$ns" "$DPCTL" add-flow "$dp" "in_port(1),$any,$t" \
				"set(tunnel(tun_id=0x5,dst=$peer,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(df|csum|key))),2"
			run ip netns exec "$ns" "$DPCTL" add-flow "$dp" \
				"tunnel(tun_id=0x5,src=$peer,dst=$self,ttl=0/0,tp_dst=6081,flags(+key)),in_port(2),$any,$t" 1
		done
	done

	sub "ping across the tunnel, both ways"
	run ip netns exec ovsdemo-th1 ping -c 3 -i 0.2 -W 2 192.168.90.2
	run ip netns exec ovsdemo-th2 ping -c 3 -i 0.2 -W 2 192.168.90.1

	for side in "$a|ovsdemo-ta" "$b|ovsdemo-tb"; do
		IFS='|' read -r dp ns <<<"$side"
		sub "$dp: the flows (the tunnel(...) keys matched the other side's encapsulation) and the ports"
		run ip netns exec "$ns" "$DPCTL" dump-flows "$dp"
		run ip netns exec "$ns" "$DPCTL" show -s "$dp"
	done
	tunnel_teardown
	echo "the tunnel's namespaces and datapaths are gone"
}
