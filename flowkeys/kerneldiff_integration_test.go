//go:build integration && linux

package flowkeys_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationKernelExtractDifferential sends every corpus packet and
// 11,000 random and mutated ones (fixed seed; OVSDP_KDIFF_SEED and
// OVSDP_KDIFF_N choose others) from a namespace over a
// veth pair into a kernel datapath port with no flows, and checks that
// the key of each MISS upcall is exactly Extract's key converted with
// odp.KeyFromFlowKeys (same canonical text and same attribute bytes).
//
// What the transport changes, and how the test accounts for it:
//   - Frames shorter than 14 bytes cannot be sent (AF_PACKET refuses
//     them); they are not sent.
//   - Frames longer than 1514 bytes exceed the veth MTU; none are made.
//   - The receiving veth's stack moves an outer 802.1Q/802.1ad tag into
//     skb metadata (skb_vlan_untag in __netif_receive_skb_core) before
//     the openvswitch rx handler runs. The kernel's key then takes the
//     outer tag from the metadata, which gives the same key as a tag in
//     the data, and the upcall's packet has the tag pushed back in. A
//     frame with a VLAN TPID and fewer than 20 bytes is dropped by
//     skb_vlan_untag (it cannot pull tag plus type), so no upcall is
//     expected for it: it is sent, and an upcall for it is a failure.
//   - Packets for which Extract reports an error (malformed NSH) are
//     dropped by the kernel's key_extract: they are sent, and an upcall
//     for one of them is a failure.
//   - skb priority and mark are 0 (AF_PACKET defaults; veth scrubs the
//     mark crossing namespaces), there is no tunnel and no conntrack
//     state: Extract gets Metadata{InPort: the port's number}.
//
// Upcalls are matched to sent packets by their bytes (the upcall carries
// the packet), so reordering across CPUs does not matter; upcalls whose
// packet was not sent by the test (the stack's own IPv6 traffic, say)
// are counted and ignored.
func TestIntegrationKernelExtractDifferential(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	d, err := genl.Create(genl.DatapathSpec{Name: fmt.Sprintf("kdiff%05d", os.Getpid()%100000)})
	if err != nil {
		t.Fatalf("genl.Create: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Delete(); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("delete datapath: %v", err)
		}
		d.Close()
	})
	ns := testenv.NewNetns(t)
	veth := testenv.NewVeth(t, nil, ns)
	// Keep the stack's own IPv6 traffic (DAD, router solicitations)
	// off the wire where possible; what remains is ignored anyway.
	ns.Run("sysctl", "-q", "-w", "net.ipv6.conf."+veth.PeerName+".disable_ipv6=1")
	ctx := context.Background()
	port, err := d.AddPort(ctx, odp.PortSpec{Name: veth.Name, Type: odp.PortNetdev})
	if err != nil {
		t.Fatalf("AddPort %s: %v", veth.Name, err)
	}
	rs, err := d.Upcalls(ctx, 1)
	if err != nil {
		t.Fatalf("Upcalls: %v", err)
	}
	// Upcalls are read raw, so that the kernel's key bytes are compared
	// as they came, independently of odp's decoder.
	sock := rs[0].(*genl.UpcallSocket)
	type rawUpcall struct {
		cmd         uint8
		packet, key []byte
	}
	upcalls := make(chan rawUpcall, 4096)
	var recvErr error
	go func() {
		defer close(upcalls)
		for {
			_, err := sock.ReadRaw(func(r *genl.RawUpcall) {
				upcalls <- rawUpcall{r.Cmd, bytes.Clone(r.Packet), bytes.Clone(r.Key)}
			})
			if err != nil {
				recvErr = err
				return
			}
		}
	}()
	defer sock.Close()

	seed, nRandom := diffSeedCount(t)
	packets := diffPackets(seed, nRandom)
	type pending struct {
		data    []byte
		want    odp.FlowKey // nil: no upcall expected
		why     string      // why no upcall is expected
		arrived bool
	}
	var compared, notExpected, tooShort, noise, resent, mismatches, emptyMPLS int
	keepGoing := os.Getenv("OVSDP_KDIFF_ALL") == "1"
	md := &flowkeys.Metadata{InPort: port.Number}
	const batch = 32
	for start := 0; start < len(packets); start += batch {
		var ps []*pending
		byData := map[string][]*pending{}
		var frames [][]byte
		waiting := 0
		for _, pkt := range packets[start:min(start+batch, len(packets))] {
			if len(pkt) < 14 {
				tooShort++
				continue // AF_PACKET refuses it
			}
			p := &pending{data: pkt}
			var k flowkeys.Key
			if err := flowkeys.Extract(pkt, md, &k); err != nil {
				p.why = "Extract: " + err.Error()
			} else if et := binary.BigEndian.Uint16(pkt[12:]); (et == 0x8100 || et == 0x88a8) && len(pkt) < 20 {
				p.why = "VLAN frame shorter than 20 bytes: skb_vlan_untag drops it"
			} else {
				p.want = odp.KeyFromFlowKeys(&k)
				waiting++
			}
			ps = append(ps, p)
			byData[string(pkt)] = append(byData[string(pkt)], p)
			frames = append(frames, pkt)
		}
		if err := ns.SendFrames(veth.PeerName, frames...); err != nil {
			t.Fatalf("sending: %v", err)
		}
		deadline := time.After(10 * time.Second)
		retried := false
		for waiting > 0 {
			var u rawUpcall
			var ok bool
			select {
			case u, ok = <-upcalls:
				if !ok {
					t.Fatalf("upcall socket stopped: %v", recvErr)
				}
			case <-deadline:
				var missing [][]byte
				for _, p := range ps {
					if p.want != nil && !p.arrived {
						missing = append(missing, p.data)
					}
				}
				if !retried {
					// Resend once in case the stack dropped a frame.
					retried = true
					resent += len(missing)
					if err := ns.SendFrames(veth.PeerName, missing...); err != nil {
						t.Fatalf("resending: %v", err)
					}
					deadline = time.After(10 * time.Second)
					continue
				}
				t.Fatalf("%d of %d packets sent gave no MISS upcall; first: %x (lost upcalls: %d)",
					len(missing), len(ps), missing[0], sock.Lost())
			}
			if u.cmd != 1 {
				t.Fatalf("unexpected upcall command %d for packet %x", u.cmd, u.packet)
			}
			cands := byData[string(u.packet)]
			var p *pending
			for _, c := range cands {
				if !c.arrived {
					p = c
					break
				}
			}
			if p == nil {
				if len(cands) == 0 {
					noise++
				}
				continue // the stack's own traffic, or a resent duplicate
			}
			p.arrived = true
			if p.want == nil {
				t.Fatalf("packet %x gave a MISS upcall, but none was expected (%s)\nkernel key: %s",
					p.data, p.why, keyText(u.key))
			}
			waiting--
			// genl decodes upcall keys with odp.UnmarshalKey: every
			// key the kernel sends must decode and re-encode to the
			// same bytes (an empty mpls attribute included).
			if dk, err := odp.UnmarshalKey(u.key); err != nil {
				t.Errorf("packet %x: kernel key %x does not decode: %v", p.data, u.key, err)
			} else if rb, err := odp.MarshalKey(dk); err != nil || !bytes.Equal(rb, u.key) {
				t.Errorf("packet %x: kernel key %x re-encodes to %x (%v)", p.data, u.key, rb, err)
			} else if m, ok := dk.Find(odp.KeyMPLS).(odp.MPLS); ok && len(m) == 0 {
				emptyMPLS++
			}
			wb, err := odp.MarshalKey(p.want)
			if err != nil {
				t.Fatalf("packet %x: MarshalKey(%s): %v", p.data, p.want, err)
			}
			if !bytes.Equal(u.key, wb) {
				report := t.Fatalf
				if keepGoing {
					// OVSDP_KDIFF_ALL=1: list every difference
					// (for fixing Extract), still failing.
					report = t.Errorf
					mismatches++
				}
				report("key mismatch after %d packets compared\npacket: %x\nkernel: %s\nours:   %s\nkernel bytes: %x\nour bytes:    %x",
					compared, p.data, keyText(u.key), odp.FormatKey(p.want, nil, true), u.key, wb)
				if mismatches >= 50 {
					t.FailNow()
				}
			}
			compared++
		}
		for _, p := range ps {
			if p.want == nil {
				notExpected++
			}
		}
	}
	// Packets that must not give an upcall: wait a little for stragglers.
	time.Sleep(500 * time.Millisecond)
drain:
	for {
		select {
		case u, ok := <-upcalls:
			if !ok {
				break drain
			}
			for _, pkt := range packets {
				var k flowkeys.Key
				if bytes.Equal(pkt, u.packet) && flowkeys.Extract(pkt, md, &k) != nil {
					t.Fatalf("packet %x gave a MISS upcall, but Extract refuses it", pkt)
				}
			}
		default:
			break drain
		}
	}
	if compared < 10000 {
		t.Errorf("only %d packets compared, want at least 10,000", compared)
	}
	if emptyMPLS == 0 {
		t.Errorf("no kernel key had an empty mpls attribute (the corpus has truncated label stacks)")
	}
	t.Logf("compared %d kernel keys with Extract's (%d packets generated from seed %d: %d sent expecting no upcall, %d too short to send; %d resent, %d unrelated upcalls ignored, %d keys with an empty mpls)",
		compared, len(packets), seed, notExpected, tooShort, resent, noise, emptyMPLS)
}

// diffSeedCount returns the seed and the number of random and mutated
// packets: 0 and 11,000, unless OVSDP_KDIFF_SEED or OVSDP_KDIFF_N say
// otherwise (for longer hunts; the default run stays reproducible).
func diffSeedCount(t *testing.T) (uint64, int) {
	seed, n := uint64(0), 11000
	if v := os.Getenv("OVSDP_KDIFF_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			t.Fatalf("OVSDP_KDIFF_SEED=%q: %v", v, err)
		}
		seed = s
	}
	if v := os.Getenv("OVSDP_KDIFF_N"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil || c < 0 {
			t.Fatalf("OVSDP_KDIFF_N=%q: want a count of packets", v)
		}
		n = c
	}
	return seed, n
}

// diffPackets returns the corpus packets followed by n random, mutated
// and randomly built packets from seed, all at most 1514 bytes.
func diffPackets(seed uint64, n int) [][]byte {
	var out [][]byte
	var corpus [][]byte
	for _, p := range flowkeystest.Corpus() {
		if len(p.Data) <= 1514 {
			out = append(out, p.Data)
			if len(p.Data) >= 14 { // mutate only what can be sent
				corpus = append(corpus, p.Data)
			}
		}
	}
	r := rand.New(rand.NewPCG(4, 2^seed))
	types := []uint16{0x0800, 0x86dd, 0x0806, 0x8035, 0x8100, 0x88a8, 0x8847, 0x8848, 0x894f, 0x0004, 0x0030, 0x05ff, 0x0600, 0x88cc}
	for i := 0; i < n; i++ {
		var p []byte
		switch i % 5 {
		case 0, 1: // a mutated corpus packet
			base := corpus[r.IntN(len(corpus))]
			p = append([]byte(nil), base...)
			for n := 1 + r.IntN(4); n > 0 && len(p) > 0; n-- {
				switch r.IntN(4) {
				case 0: // flip a byte
					p[r.IntN(len(p))] ^= byte(1 + r.IntN(255))
				case 1: // set a byte to an interesting value
					p[r.IntN(len(p))] = []byte{0, 1, 5, 6, 0x11, 0x2c, 0x3a, 0x3b, 0x40, 0x45, 0x81, 0x87, 0x88, 0xff}[r.IntN(14)]
				case 2: // truncate, keeping the 14 bytes AF_PACKET needs
					if len(p) > 14 {
						p = p[:14+r.IntN(len(p)-14+1)]
					}
				case 3: // append random bytes
					for m := r.IntN(40); m > 0; m-- {
						p = append(p, byte(r.Uint32()))
					}
				}
			}
		case 2: // random bytes behind a plausible Ethernet type
			p = make([]byte, 14+r.IntN(120))
			for j := range p {
				p[j] = byte(r.Uint32())
			}
			binary.BigEndian.PutUint16(p[12:], types[r.IntN(len(types))])
			if r.IntN(2) == 0 && len(p) >= 18 {
				binary.BigEndian.PutUint16(p[16:], types[r.IntN(len(types))])
			}
		case 3: // a valid IPv4 or IPv6 header with random payload
			p = randomIP(r)
		case 4: // headers built field by field, sometimes cut short
			p = randomStructured(r)
		}
		if len(p) > 1514 {
			p = p[:1514]
		}
		out = append(out, p)
	}
	return out
}

// randomIP builds an Ethernet frame with a well-formed IPv4 or IPv6
// header (random addresses, protocol, flags) and a random L4 part.
func randomIP(r *rand.Rand) []byte {
	eth := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0, 0}
	protos := []byte{1, 6, 17, 132, 58, 0, 43, 44, 51, 59, 60, 47}
	l4 := make([]byte, r.IntN(64))
	for i := range l4 {
		l4[i] = byte(r.Uint32())
	}
	if len(l4) > 12 && r.IntN(2) == 0 {
		l4[12] = 0x50 // a plausible TCP data offset
	}
	if r.IntN(2) == 0 {
		binary.BigEndian.PutUint16(eth[12:], 0x0800)
		ip := make([]byte, 20)
		for i := range ip {
			ip[i] = byte(r.Uint32())
		}
		ip[0] = 0x45
		ip[9] = protos[r.IntN(len(protos))]
		binary.BigEndian.PutUint16(ip[6:], []uint16{0, 0x4000, 0x2000, 0x2001, 0x0001}[r.IntN(5)])
		return append(append(eth, ip...), l4...)
	}
	binary.BigEndian.PutUint16(eth[12:], 0x86dd)
	ip := make([]byte, 40)
	for i := range ip {
		ip[i] = byte(r.Uint32())
	}
	ip[0] = 0x60 | ip[0]&0x0f
	ip[6] = protos[r.IntN(len(protos))]
	return append(append(eth, ip...), l4...)
}

// keyText formats raw key attributes, or says why they do not decode.
func keyText(b []byte) string {
	k, err := odp.UnmarshalKey(b)
	if err != nil {
		return fmt.Sprintf("(odp cannot decode it: %v)", err)
	}
	return odp.FormatKey(k, nil, true)
}

// randomStructured builds a frame header by header with random but
// mostly plausible fields: up to two VLAN tags, then an IPv6 packet with
// a chain of extension headers (any order, small lengths, fragment
// headers with random offsets) and a TCP, UDP, SCTP or ICMPv6 (often
// neighbour discovery with options) header; or an MPLS stack whose
// bottom-of-stack bit may come late or never; or an ARP header with
// near-valid sizes. A third of the frames are cut at a random length.
func randomStructured(r *rand.Rand) []byte {
	p := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
	for n := r.IntN(3); n > 0; n-- {
		p = binary.BigEndian.AppendUint16(p, []uint16{0x8100, 0x88a8}[r.IntN(2)])
		p = binary.BigEndian.AppendUint16(p, uint16(r.Uint32()))
	}
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	switch r.IntN(4) {
	case 0, 1: // IPv6 with an extension-header chain
		p = binary.BigEndian.AppendUint16(p, 0x86dd)
		ip := rnd(40)
		ip[0] = 0x60 | ip[0]&0x0f
		nh := len(p) + 6
		p = append(p, ip...)
		exts := []byte{0, 43, 44, 51, 60, 59, 50}
		last := nh
		for n := r.IntN(5); n > 0; n-- {
			t := exts[r.IntN(len(exts))]
			p[last] = t
			if t == 59 || t == 50 {
				last = -1
				p = append(p, rnd(r.IntN(16))...)
				break
			}
			var h []byte
			switch t {
			case 44:
				h = rnd(8)
				off := []uint16{0, 0, 1, 185}[r.IntN(4)]
				binary.BigEndian.PutUint16(h[2:], off<<3|uint16(r.IntN(2)))
			case 51:
				l := r.IntN(3)
				h = rnd((l + 2) * 4)
				h[1] = byte(l)
			default:
				l := r.IntN(2)
				h = rnd((l + 1) * 8)
				h[1] = byte(l)
			}
			last = len(p)
			p = append(p, h...)
		}
		if last >= 0 {
			l4 := []byte{6, 17, 132, 58, 58}[r.IntN(5)]
			p[last] = l4
			switch l4 {
			case 6:
				h := rnd(20 + 4*r.IntN(3))
				h[12] = byte(len(h)/4)<<4 | h[12]&0x0f
				p = append(p, h...)
			case 17:
				p = append(p, rnd(8)...)
			case 132:
				p = append(p, rnd(12)...)
			case 58:
				h := rnd(24)
				h[0] = []byte{135, 136, 128, 1}[r.IntN(4)]
				if r.IntN(4) != 0 {
					h[1] = 0
				}
				p = append(p, h...)
				for n := r.IntN(4); n > 0; n-- {
					l := []int{1, 1, 1, 2, 0}[r.IntN(5)]
					o := rnd(max(8*l, 8))
					o[0] = []byte{1, 2, 1, 2, 3}[r.IntN(5)]
					o[1] = byte(l)
					p = append(p, o...)
				}
			}
		}
	case 2: // an MPLS stack
		p = binary.BigEndian.AppendUint16(p, []uint16{0x8847, 0x8848}[r.IntN(2)])
		n := 1 + r.IntN(5)
		bos := r.IntN(n + 1) // n: no bottom of stack
		for i := 0; i < n; i++ {
			lse := r.Uint32() &^ 0x100
			if i == bos {
				lse |= 0x100
			}
			p = binary.BigEndian.AppendUint32(p, lse)
		}
		p = append(p, rnd(r.IntN(24))...)
	case 3: // ARP or RARP
		p = binary.BigEndian.AppendUint16(p, []uint16{0x0806, 0x8035}[r.IntN(2)])
		h := rnd(28)
		binary.BigEndian.PutUint16(h[0:], []uint16{1, 1, 1, 6}[r.IntN(4)])
		binary.BigEndian.PutUint16(h[2:], []uint16{0x0800, 0x0800, 0x86dd}[r.IntN(3)])
		h[4] = []byte{6, 6, 8}[r.IntN(3)]
		h[5] = []byte{4, 4, 16}[r.IntN(3)]
		binary.BigEndian.PutUint16(h[6:], []uint16{1, 2, 3, 4, 0x101}[r.IntN(5)])
		p = append(p, h...)
	}
	if r.IntN(3) == 0 && len(p) > 14 {
		p = p[:14+r.IntN(len(p)-14)]
	}
	return p
}
