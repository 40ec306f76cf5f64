package userdp

import (
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// FuzzExecute decodes an action list from netlink bytes, compiles it
// against the key of a fuzzed packet and, when accepted, executes it on
// that packet: nothing may panic, whatever the actions and the packet.
func FuzzExecute(f *testing.F) {
	seedActs := []string{
		"2", "set(ipv4(ttl=5)),2", "push_vlan(vid=10,pcp=3),pop_vlan,2", "dec_ttl(le_1(2)),2",
		"clone(set(ipv4(src=1.2.3.4)),2),3", "check_pkt_len(size=50,gt(2),le(3))", "trunc(20),userspace(pid=0)",
		"push_mpls(label=1,tc=0,ttl=9,bos=1,eth_type=0x8847),pop_mpls(eth_type=0x800),2", "hash(l4(0)),recirc(1)",
		"set(tcp(src=1)),set(udp(dst=2)),set(icmp(type=0)),set(arp(op=2)),2",
		"ct(commit,zone=1,nat(src=10.0.0.9:100-101)),2", "ct(commit,nat(dst=10.0.0.8)),ct(nat),2", "ct,ct_clear,recirc(1)",
		"ct(zone=2),2,push_vlan(vid=5,pcp=0),2", "ct(commit,nat(src=10.0.0.7)),trunc(100),2", "ct(zone=2),userspace(pid=0),2",
	}
	// Fragments (IPv4 and IPv6) complete datagrams across the inputs: the
	// worker's tracker keeps them.
	_, f4 := fragDatagram(false, 200, 7, 104, 104)
	_, f6 := fragDatagram(true, 200, 7, 104, 104)
	frames := [][]byte{udpFrame(1, 2, 1000), make([]byte, 14), make([]byte, 60), f4[0], f4[1], f6[0], f6[1]}
	for i, s := range seedActs {
		as, err := odp.ParseActions(s)
		if err != nil {
			f.Fatal(err)
		}
		b, err := odp.MarshalActions(as)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, frames[i%len(frames)])
	}
	dp, err := New("fuzz", WithoutLocalPort(), WithRebalanceInterval(0))
	if err != nil {
		f.Fatal(err)
	}
	defer dp.Close()
	for i := uint32(1); i <= 3; i++ {
		if _, err := dp.AttachPort(newSinkPort("s"+itoa(i)), i); err != nil {
			f.Fatal(err)
		}
	}
	w := newWorker(dp, 64)
	f.Fuzz(func(t *testing.T, actBytes, pkt []byte) {
		as, err := odp.UnmarshalActions(actBytes)
		if err != nil || len(pkt) > 4096 {
			return
		}
		var key flowkeys.Key
		if flowkeys.Extract(pkt, &flowkeys.Metadata{InPort: 1}, &key) != nil {
			return
		}
		prog, err := compileActions(as, &key)
		if err != nil {
			return
		}
		buf := make([]byte, DefaultHeadroom+len(pkt)+64)
		copy(buf[DefaultHeadroom:], pkt)
		c := &w.ctx
		*c = pktCtx{f: frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(pkt)}, key: key, keyValid: true,
			acts: &flowActions{odp: as, prog: prog}}
		w.run(c, prog)
		w.flush()
	})
}
