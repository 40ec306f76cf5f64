#!/usr/bin/env bash
# The demo. Until the upcall daemon lands, it shows the flow syntax tools:
# sample flows and actions are parsed, encoded to the kernel's netlink
# attributes, decoded back and printed in Open vSwitch's canonical form.
set -euo pipefail
cd "$(dirname "$0")/.."
dpctl=${DPCTL:-bin/dpctl}

echo "== dpctl parse-wc-keys: flow keys with masks, through netlink and back"
"$dpctl" parse-wc-keys <<'FLOWS'
# An IPv4/TCP megaflow with a /24 destination.
in_port(1),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2/255.255.255.0,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080)
# A VLAN-tagged frame: the inner match lives in encap().
in_port(2),eth(src=00:00:00:00:00:03,dst=ff:ff:ff:ff:ff:ff),eth_type(0x8100),vlan(vid=10,pcp=0),encap(eth_type(0x0806),arp(sip=10.0.0.3,tip=10.0.0.4,op=1,sha=00:00:00:00:00:03,tha=00:00:00:00:00:00))
FLOWS

echo
echo "== dpctl parse-actions: action lists, through netlink and back"
"$dpctl" parse-actions <<'ACTIONS'
set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2
set(ipv4(src=192.168.0.1,dst=192.168.0.2,tos=0x10/0xfc)),set(tcp(dst=8080)),3
clone(push_vlan(vid=20,pcp=3),1),userspace(pid=4242,userdata(cafe)),drop
ACTIONS

echo
echo "== a bad flow says where it is wrong"
"$dpctl" parse-keys <<<'in_port(1),eth(src=00:00:00:00:00:01,dst=nonsense)' || true
