package main

// geneveFlows are flows on Geneve option bytes: exact, a masked value,
// two options, none (an empty geneve(): options of length 0), and a
// value with the option's header wildcarded.
var geneveFlows = [][2]string{
	{geneveUFID + ",tunnel(tun_id=0x5,src=1.1.1.1,dst=2.2.2.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c3d4}),flags(+key)),in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "2"},
	{"tunnel(tun_id=0x6,dst=2.2.2.2,ttl=64,geneve({class=0x102,type=0x80,len=4,0xa1b2c300/0xffffff00}),flags(+key)),in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "2"},
	{"tunnel(tun_id=0x7,dst=2.2.2.2,ttl=64,geneve({class=0xffff,type=0x1,len=8,0x1122334455667788}{class=0x103,type=0x2,len=0}),flags(+key)),in_port(2),eth(),eth_type(0x0806),arp()", "1"},
	{"tunnel(tun_id=0x8,dst=2.2.2.2,ttl=64,geneve(),flags(+key)),in_port(2),eth(),eth_type(0x0800),ipv4(frag=no)", "1"},
	{"tunnel(tun_id=0x9,dst=2.2.2.2,ttl=64,geneve({class=0/0,type=0/0,len=4,0xdeadbeef}),flags(+key)),in_port(2),eth(),eth_type(0x0800),ipv4(frag=no)", "drop"},
}

// geneveUFID is the first of geneveFlows' UFID.
const geneveUFID = "ufid:6e657665-0000-4000-8000-000000000001"

// erspanFlows are flows on ERSPAN metadata (struct erspan_metadata in the
// key's option bytes, as the kernel's): version 1 exact and with a
// masked index, version 2 exact and on the direction only; their actions
// set ERSPAN metadata (set(tunnel(...,erspan(...)))).
var erspanFlows = [][2]string{
	{erspanUFID + ",tunnel(src=1.1.1.1,dst=2.2.2.2,ttl=64,erspan(ver=1,idx=0x7),flags(-key)),in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)", "2"},
	{"tunnel(dst=2.2.2.2,ttl=64,erspan(ver=1,idx=0x700/0xff00),flags(-key)),in_port(2),eth(),eth_type(0x0800),ipv4(frag=no)",
		"set(tunnel(tun_id=0x1,dst=3.3.3.3,ttl=64,erspan(ver=1,idx=0x9),flags(key))),1"},
	{"tunnel(tun_id=0x3,dst=2.2.2.2,ttl=64,erspan(ver=2,dir=1,hwid=0x5),flags(+key)),in_port(1),eth(),eth_type(0x0800),ipv4(frag=no)",
		"set(tunnel(dst=3.3.3.3,ttl=64,erspan(ver=2,dir=0,hwid=0x1))),2"},
	{"tunnel(tun_id=0x4,dst=2.2.2.2,ttl=64,erspan(ver=2,dir=1/0x1,hwid=0/0),flags(+key)),in_port(2),eth(),eth_type(0x0806),arp()", "drop"},
}

// erspanUFID is the first of erspanFlows' UFID.
const erspanUFID = "ufid:65727370-0000-4000-8000-000000000001"
