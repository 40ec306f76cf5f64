package flowkeys_test

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
)

// pair runs ours and baseline as sub-benchmarks "ours" and "baseline".
// Because this machine is shared, "ours" interleaves the two in 20
// alternating chunks of b.N/20 iterations, so that both see the same load,
// and reports ours' ns/op, the baseline's ("baseline-ns/op") and how many
// times faster ours is ("x-vs-baseline") from that interleaved timing.
func pair(b *testing.B, ours, baseline func(n int)) {
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		chunk := max(1, b.N/20)
		var ourNs, baseNs int64
		for done := 0; done < b.N; done += chunk {
			n := min(chunk, b.N-done)
			t0 := time.Now()
			ours(n)
			t1 := time.Now()
			baseline(n)
			ourNs += t1.Sub(t0).Nanoseconds()
			baseNs += time.Since(t1).Nanoseconds()
		}
		b.ReportMetric(float64(ourNs)/float64(b.N), "ns/op")
		b.ReportMetric(float64(baseNs)/float64(b.N), "baseline-ns/op")
		if ourNs > 0 {
			b.ReportMetric(float64(baseNs)/float64(ourNs), "x-vs-baseline")
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		baseline(b.N)
	})
}

// mixedPackets is a realistic mix: mostly TCP and UDP over IPv4, some
// IPv6, VLAN-tagged traffic, ARP, ICMP and neighbour discovery.
func mixedPackets() [][]byte {
	byName := map[string][]byte{}
	for _, p := range flowkeystest.Corpus() {
		byName[p.Name] = p.Data
	}
	var out [][]byte
	for _, n := range []string{"ipv4/tcp", "ipv4/tcp", "ipv4/tcp", "ipv4/udp", "ipv4/udp", "ipv6/udp",
		"qinq/ipv6/tcp", "vlan/ipv4/udp", "arp/request", "ipv4/icmp-echo", "nd/ns-sll", "ipv4/options/tcp"} {
		d, ok := byName[n]
		if !ok {
			panic("corpus lacks " + n)
		}
		out = append(out, d)
	}
	return out
}

func BenchmarkExtract(b *testing.B) {
	pkts := mixedPackets()
	md := &flowkeys.Metadata{InPort: 1}
	var k flowkeys.Key
	var eth layers.Ethernet
	var dot1q layers.Dot1Q
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	var udp layers.UDP
	var icmp4 layers.ICMPv4
	var icmp6 layers.ICMPv6
	var arp layers.ARP
	var payload gopacket.Payload
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &dot1q, &ip4, &ip6, &tcp, &udp, &icmp4, &icmp6, &arp, &payload)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 10)
	pair(b, func(n int) {
		for i := 0; i < n; i++ {
			_ = flowkeys.Extract(pkts[i%len(pkts)], md, &k)
		}
	}, func(n int) {
		for i := 0; i < n; i++ {
			_ = parser.DecodeLayers(pkts[i%len(pkts)], &decoded)
		}
	})
}

func fullKey() flowkeys.Key {
	var k flowkeys.Key
	for i := range k.Words() {
		k.Words()[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	return k
}

// BenchmarkHashLongestKey hashes the whole key with Hash (CRC32C on a CPU
// that has the instruction) against the kernel's jhash2 over the same
// words.
func BenchmarkHashLongestKey(b *testing.B) {
	k := fullKey()
	var sink uint32
	words := k.Words()[:]
	_ = words
	pair(b, func(n int) {
		for i := 0; i < n; i++ {
			sink += flowkeys.HashCRC32C(&k, flowkeys.FullRange, uint32(i))
		}
	}, func(n int) {
		for i := 0; i < n; i++ {
			sink += flowkeys.HashJHash2(&k, flowkeys.FullRange, uint32(i))
		}
	})
	_ = sink
}

// BenchmarkHashImpl measures Hash under each implementation, as selected
// by SetHashImpl (or OVSDP_HASH).
func BenchmarkHashImpl(b *testing.B) {
	k := fullKey()
	orig, _ := flowkeys.HashImpl()
	defer flowkeys.SetHashImpl(orig)
	var sink uint32
	for _, name := range []string{flowkeys.HashImplCRC32C, flowkeys.HashImplJHash2} {
		b.Run(name, func(b *testing.B) {
			if err := flowkeys.SetHashImpl(name); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				sink += flowkeys.Hash(&k, flowkeys.FullRange, uint32(i))
			}
		})
	}
	_ = sink
}

func benchCRCRange(b *testing.B, words int) {
	k := fullKey()
	r := flowkeys.Range{Start: 8, End: 8 + words}
	buf := k.Bytes()[8*r.Start : 8*r.End]
	tab := crc32.MakeTable(crc32.Castagnoli)
	var sink uint32
	pair(b, func(n int) {
		for i := 0; i < n; i++ {
			sink += flowkeys.HashCRC32C(&k, r, uint32(i))
		}
	}, func(n int) {
		for i := 0; i < n; i++ {
			sink += crc32.Update(uint32(i), tab, buf)
		}
	})
	_ = sink
}

// BenchmarkHashRange64 and BenchmarkHashRange128 compare the CRC32C of a
// 64- and 128-byte word range with hash/crc32's Castagnoli over the same
// bytes.
func BenchmarkHashRange64(b *testing.B)  { benchCRCRange(b, 8) }
func BenchmarkHashRange128(b *testing.B) { benchCRCRange(b, 16) }

// BenchmarkHashKeyed compares the keyed hash a table should use with
// the plain CRC32C over the same 128-byte range.
func BenchmarkHashKeyed(b *testing.B) {
	k := fullKey()
	r := flowkeys.Range{Start: 8, End: 24}
	h := flowkeys.NewKeyedHasher()
	var sink uint32
	pair(b, func(n int) {
		for i := 0; i < n; i++ {
			sink += h.Hash(&k, r, uint32(i))
		}
	}, func(n int) {
		for i := 0; i < n; i++ {
			sink += flowkeys.HashCRC32C(&k, r, uint32(i))
		}
	})
	_ = sink
}

// byteMaskedEqual is the byte-at-a-time masked comparison baseline.
func byteMaskedEqual(a, b, m []byte) bool {
	for i := range a {
		if (a[i]^b[i])&m[i] != 0 {
			return false
		}
	}
	return true
}

func BenchmarkEqualMasked128(b *testing.B) {
	x := fullKey()
	y := x
	m := fullKey()
	r := flowkeys.Range{Start: 8, End: 24}
	xb, yb, mb := x.Bytes()[64:192], y.Bytes()[64:192], m.Bytes()[64:192]
	var ok bool
	b.Run("vs-byte-loop", func(b *testing.B) {
		pair(b, func(n int) {
			for i := 0; i < n; i++ {
				ok = flowkeys.EqualMasked(&x, &y, &m, r)
			}
		}, func(n int) {
			for i := 0; i < n; i++ {
				ok = byteMaskedEqual(xb, yb, mb)
			}
		})
	})
	b.Run("vs-bytes.Equal", func(b *testing.B) {
		pair(b, func(n int) {
			for i := 0; i < n; i++ {
				ok = flowkeys.EqualMasked(&x, &y, &m, r)
			}
		}, func(n int) {
			for i := 0; i < n; i++ {
				ok = bytes.Equal(xb, yb)
			}
		})
	})
	_ = ok
}
