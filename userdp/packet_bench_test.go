package userdp

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

// setIPv4Full is the baseline of BenchmarkSetIPv4: write all four
// settable fields and recompute the IPv4 header checksum from scratch
// (and, as the fields include the addresses, the L4 checksum
// incrementally as any correct implementation must).
func setIPv4Full(frame []byte, h *pktHeaders, key *odp.IPv4) {
	ip := frame[h.L3 : h.L3+20]
	copy(ip[12:16], key.Src[:])
	copy(ip[16:20], key.Dst[:])
	ip[1] = key.TOS
	ip[8] = key.TTL
	binary.BigEndian.PutUint16(ip[10:], header.IPv4(ip).CalculateChecksum())
}

func TestPacketOpsNoAllocs(t *testing.T) {
	rng := newRand(t)
	f4 := testIPv4(rng, header.IPProtoTCP, 32, 0)
	f6 := testIPv6(rng, header.IPProtoUDP, 32)
	fs := testIPv4(rng, header.IPProtoSCTP, 32, 0)
	ft := testIPv4(rng, header.IPProtoUDP, 8, 0)
	ft[22] = 255
	fixIPv4(ft, 14)
	ht := mustParse(t, ft)
	h4, h6, hs := mustParse(t, f4), mustParse(t, f6), mustParse(t, fs)
	k4 := odp.IPv4{Src: [4]byte{1, 2, 3, 4}, TTL: 9}
	m4 := odp.IPv4{Src: [4]byte{255, 255, 255, 255}, TTL: 0xff}
	k6 := odp.IPv6{Dst: [16]byte{1}, HLimit: 3}
	m6 := odp.IPv6{Dst: [16]byte{0xff, 0xff}, HLimit: 0xff}
	pk, pm := odp.TCP{Src: 1, Dst: 2}, odp.TCP{Src: 0xffff, Dst: 0xffff}
	buf := make([]byte, DefaultHeadroom+len(f4)+8)
	var hh pktHeaders
	ops := map[string]func(){
		"parseHeaders":     func() { parseHeaders(f6, &hh) },
		"setIPv4Masked":    func() { k4.Src[3]++; setIPv4Masked(f4, h4, &k4, &m4) },
		"setIPv6Masked":    func() { k6.Dst[1]++; setIPv6Masked(f6, h6, &k6, &m6) },
		"setTCPMasked":     func() { pk.Src++; setTCPMasked(f4, h4, &pk, &pm) },
		"setUDPMasked":     func() { pk.Src++; setUDPMasked(f6, h6, (*odp.UDP)(&pk), (*odp.UDP)(&pm)) },
		"setSCTPMasked":    func() { pk.Src++; setSCTPMasked(fs, hs, (*odp.SCTP)(&pk), (*odp.SCTP)(&pm)) },
		"SetEthernet":      func() { setEthernetMasked(f4, &odp.Ethernet{}, &odp.Ethernet{Src: [6]byte{1}}) },
		"decTTLHeaders":    func() { decTTLHeaders(ft, ht) },
		"completeChecksum": func() { completeChecksum(f4) },
		"PushPopVLAN": func() {
			copy(buf[DefaultHeadroom:], f4)
			fr := frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(f4)}
			pushVLAN(&fr, header.EtherTypeVLAN, 5)
			popVLAN(&fr)
		},
		"PushPopMPLS": func() {
			copy(buf[DefaultHeadroom:], f4)
			fr := frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(f4)}
			pushMPLS(&fr, h4, 0x100, header.EtherTypeMPLS)
			parseHeaders(fr.Bytes(), &hh)
			popMPLS(&fr, &hh, header.EtherTypeIPv4, true)
		},
	}
	for name, op := range ops {
		if a := testing.AllocsPerRun(100, op); a != 0 {
			t.Errorf("%s: %v allocations, want 0", name, a)
		}
	}
	checkIPv4(t, f4, 14)
	checkIPv6(t, f6, 14, h6.L4, header.IPProtoUDP)
	checkIPv4(t, fs, 14)
	checkIPv4(t, ft, 14)
	if ft[22] >= 255 {
		t.Errorf("TTL not decremented")
	}
}

// BenchmarkSetIPv4 compares the masked set of the TTL alone with the
// baseline that writes src, dst, tos and ttl and recomputes the header
// checksum from scratch; the "speedup" metric of TTLOnly is measured
// against a baseline run inside the same benchmark.
func BenchmarkSetIPv4(b *testing.B) {
	rng := newRand(b)
	f := testIPv4(rng, header.IPProtoUDP, 18, 0)
	h := mustParse(b, f)
	key := odp.IPv4{TTL: 63}
	copy(key.Src[:], f[26:30])
	copy(key.Dst[:], f[30:34])
	key.TOS = f[15]
	mask := odp.IPv4{TTL: 0xff}
	const inner = 1000
	masked := func() {
		for j := 0; j < inner; j++ {
			key.TTL ^= 1
			setIPv4Masked(f, h, &key, &mask)
		}
	}
	full := func() {
		for j := 0; j < inner; j++ {
			key.TTL ^= 1
			setIPv4Full(f, h, &key)
		}
	}
	b.Run("TTLOnly", func(b *testing.B) {
		// Each iteration times 1000 masked sets and 1000 baseline
		// sets, interleaved, so both see the same machine load.
		var tm, tf time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			masked()
			t1 := time.Now()
			full()
			tf += time.Since(t1)
			tm += t1.Sub(t0)
		}
		b.ReportMetric(float64(tm.Nanoseconds())/float64(b.N)/inner, "ns/masked-set")
		b.ReportMetric(float64(tf.Nanoseconds())/float64(b.N)/inner, "ns/full-set")
		b.ReportMetric(float64(tf)/float64(tm), "speedup")
	})
	b.Run("MaskedTTL", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			key.TTL ^= 1
			setIPv4Masked(f, h, &key, &mask)
		}
	})
	b.Run("FullRecompute", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			key.TTL ^= 1
			setIPv4Full(f, h, &key)
		}
	})
}
