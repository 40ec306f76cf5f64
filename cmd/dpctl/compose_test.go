package main

import (
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// TestComposePacket checks that the packet built from an exact flow
// extracts (as the kernel would) to the key it was built from.
func TestComposePacket(t *testing.T) {
	const eth = "in_port(3),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),"
	for _, s := range []string{
		eth + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=4,ttl=64,frag=no),tcp(src=1,dst=2),tcp_flags(syn|ack)",
		eth + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=1,frag=first),udp(src=1,dst=2)",
		eth + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=1,frag=later)",
		eth + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=132,tos=0,ttl=9,frag=no),sctp(src=5,dst=6)",
		eth + "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=1,tos=0,ttl=9,frag=no),icmp(type=8,code=0)",
		eth + "eth_type(0x86dd),ipv6(src=2001:db8::1,dst=2001:db8::2,label=0x12345,proto=17,tclass=3,hlimit=9,frag=no),udp(src=7,dst=8)",
		eth + "eth_type(0x86dd),ipv6(src=2001:db8::1,dst=2001:db8::2,label=0,proto=58,tclass=0,hlimit=255,frag=no),icmpv6(type=129,code=0)",
		eth + "eth_type(0x86dd),ipv6(src=fe80::1,dst=ff02::1,label=0,proto=58,tclass=0,hlimit=255,frag=no),icmpv6(type=135,code=0),nd(target=2001:db8::9,sll=00:00:00:00:00:01,tll=00:00:00:00:00:00)",
		eth + "eth_type(0x86dd),ipv6(src=fe80::1,dst=ff02::1,label=0,proto=58,tclass=0,hlimit=255,frag=no),icmpv6(type=136,code=0),nd(target=2001:db8::9,sll=00:00:00:00:00:00,tll=00:00:00:00:00:05)",
		eth + "eth_type(0x0806),arp(sip=10.0.0.1,tip=10.0.0.2,op=2,sha=00:00:00:00:00:01,tha=00:00:00:00:00:07)",
		eth + "eth_type(0x8847),mpls(label=100,tc=3,ttl=64,bos=1)",
		eth + "eth_type(0x88a8),vlan(vid=5,pcp=1),encap(eth_type(0x8100),vlan(vid=7,pcp=0),encap(eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=9,frag=no),udp(src=1,dst=2)))",
	} {
		key, err := odp.ParseKey(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want, err := odp.ToFlowKeysExact(key)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		pkt, err := composePacket(&want)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		var got flowkeys.Key
		md := flowkeys.Metadata{InPort: want.InPort}
		if err := flowkeys.Extract(pkt, &md, &got); err != nil {
			t.Errorf("%s: extract: %v", s, err)
			continue
		}
		if got != want {
			t.Errorf("%s:\nbuilt %x\nwhich extracts to %s", s, pkt, odp.FormatKey(odp.KeyFromFlowKeys(&got), nil, false))
		}
	}
	for _, s := range []string{
		"in_port(1),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=9,frag=no),udp(src=1,dst=2)",
		eth + "eth_type(0x86dd),ipv6(src=::1,dst=::2,label=0,proto=17,tclass=0,hlimit=9,frag=first),udp(src=1,dst=2)",
	} {
		key, err := odp.ParseKey(s)
		if err != nil {
			t.Fatal(err)
		}
		k, err := odp.ToFlowKeysExact(key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := composePacket(&k); err == nil {
			t.Errorf("%s: built a packet, want an error", s)
		}
	}
}
