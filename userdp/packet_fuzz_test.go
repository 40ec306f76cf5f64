package userdp

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// FuzzPacketOps runs every packet operation on arbitrary frames: none may
// panic, and on an IPv4 frame whose header checksum was valid, a masked
// IPv4 set and dec_ttl keep it valid.
func FuzzPacketOps(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	f.Add(testIPv4(rng, header.IPProtoTCP, 10, 0), uint64(1))
	f.Add(testIPv4(rng, header.IPProtoUDP, 3, 0x2000), uint64(2))
	f.Add(testIPv4(rng, header.IPProtoSCTP, 8, 0), uint64(3))
	f.Add(testIPv6(rng, header.IPProtoUDP, 4, []byte{header.IPProtoHopByHop, 0, 0, 1, 4, 0, 0, 0, 0}), uint64(4))
	f.Add(testIPv6(rng, header.IPProtoTCP, 0, []byte{header.IPProtoRouting, 0, 0, 0, 2, 0, 0, 0, 0}), uint64(5))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0, 1, 0x88, 0x47, 0, 0, 1, 0x40}, uint64(6))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		frame := append([]byte(nil), data...)
		var h pktHeaders
		if err := parseHeaders(frame, &h); err != nil {
			return
		}
		if h.L3 > len(frame) || h.L4 > len(frame) || h.MACLen > len(frame) {
			t.Fatalf("offsets beyond the frame: %+v, len %d", h, len(frame))
		}
		// The datapath takes the network header offset from key
		// extraction (pktCtx.l3off); it must be the one parseHeaders
		// finds.
		var key flowkeys.Key
		if l3, err := flowkeys.ExtractPortL3(frame, 1, &key); err == nil && l3 != h.L3 {
			t.Fatalf("ExtractPortL3 finds the network header at %d, parseHeaders at %d", l3, h.L3)
		}
		validIP := h.EthType == header.EtherTypeIPv4 && len(frame) >= h.L3+20 && frame[h.L3]&0xf == 5 &&
			refCsum(frame[h.L3:h.L3+20]) == 0
		var k4, m4 odp.IPv4
		binary.BigEndian.PutUint32(m4.Src[:], r.Uint32())
		binary.BigEndian.PutUint32(m4.Dst[:], r.Uint32())
		binary.BigEndian.PutUint32(k4.Src[:], r.Uint32())
		m4.TTL, m4.TOS, k4.TTL, k4.TOS = byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())
		err := setIPv4Masked(frame, &h, &k4, &m4)
		if validIP && err == nil && refCsum(frame[h.L3:h.L3+20]) != 0 {
			t.Fatalf("IPv4 header checksum invalid after set")
		}
		var k6, m6 odp.IPv6
		m6.Src[r.IntN(16)] = 0xff
		m6.Dst[r.IntN(16)] = 0xff
		k6.Src[3], m6.Label, m6.HLimit = 9, 0xfffff, 0xff
		setIPv6Masked(frame, &h, &k6, &m6)
		pk, pm := odp.TCP{Src: uint16(r.Uint32()), Dst: uint16(r.Uint32())}, odp.TCP{Src: 0xffff, Dst: uint16(r.Uint32())}
		setTCPMasked(frame, &h, &pk, &pm)
		setUDPMasked(frame, &h, (*odp.UDP)(&pk), (*odp.UDP)(&pm))
		setSCTPMasked(frame, &h, (*odp.SCTP)(&pk), (*odp.SCTP)(&pm))
		setEthernetMasked(frame, &odp.Ethernet{}, &odp.Ethernet{Dst: [6]byte{1}})
		setMPLSMasked(frame, &h, 1, 0xffffffff)
		_, err = decTTLHeaders(frame, &h)
		if validIP && err == nil && skbProtocol(frame) == header.EtherTypeIPv4 && refCsum(frame[h.L3:h.L3+20]) != 0 {
			t.Fatalf("IPv4 header checksum invalid after dec_ttl")
		}
		completeChecksum(frame)
		truncLen(frame, r.Uint32N(100))
		buf := make([]byte, 8+len(frame))
		copy(buf[8:], frame)
		fr := frameBuf{Buf: buf, Off: 8, Len: len(frame)}
		pushVLAN(&fr, header.EtherTypeVLAN, 3)
		pushMPLS(&fr, &h, 5, header.EtherTypeMPLS)
		parseHeaders(fr.Bytes(), &h)
		popMPLS(&fr, &h, header.EtherTypeIPv4, true)
		popVLAN(&fr)
		if fr.Off < 0 || fr.Off+fr.Len > len(fr.Buf) {
			t.Fatalf("frame bounds %d+%d in %d", fr.Off, fr.Len, len(fr.Buf))
		}
	})
}

// FuzzMemPipe writes arbitrary frames through an in-memory pipe: what is
// read is what was written (or counted as an error when too long).
func FuzzMemPipe(f *testing.F) {
	f.Add([]byte("hello"), 3)
	f.Fuzz(func(t *testing.T, data []byte, off int) {
		a, b, err := NewMemPipe("a", "b", 100, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteBatch([][]byte{data}); err != nil {
			t.Fatal(err)
		}
		if len(data) > 122 {
			if st := a.Stats(); st.TxErrors != 1 {
				t.Fatalf("oversized frame not counted: %+v", st)
			}
			return
		}
		bufs := [][]byte{make([]byte, 200)}
		sizes := []int{0}
		n, err := b.ReadBatch(bufs, sizes, off)
		if err != nil {
			t.Fatal(err)
		}
		if off < 0 || off > 200 || 200-off < len(data) {
			if n != 0 || b.Stats().RxErrors != 1 {
				t.Fatalf("bad offset %d: n=%d", off, n)
			}
			return
		}
		if n != 1 || string(bufs[0][off:off+sizes[0]]) != string(data) {
			t.Fatalf("read %d frames: %q", n, bufs[0][off:off+sizes[0]])
		}
	})
}
