package userdp

import (
	"encoding/binary"
	"sort"
	"testing"
	"time"
)

// seqFrame is udpFrame64 with a 32-bit sequence number in its payload.
func seqFrame(seq uint32) []byte {
	f := udpFrame64(int(seq))
	binary.BigEndian.PutUint32(f[42:], seq)
	return f
}

// isSeqFrame reports whether f is a seqFrame (not a frame of the
// kernel's, such as IPv6 neighbour discovery on the veth).
func isSeqFrame(f []byte) bool {
	return len(f) >= 46 && f[11] == 0x01 && f[5] == 0x02 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 17
}

// BenchmarkNetdevRingIdle measures how long a lone frame written to an
// idle port's veth peer takes to come out of ReadBatch (p50 and p99 in
// µs): the flow-setup case, the first frame of a flow.
func BenchmarkNetdevRingIdle(b *testing.B) {
	rx, tx := netdevPair(b, NetdevRing)
	bufs := [][]byte{make([]byte, BufferSize(rx.MTU()))}
	sizes := []int{0}
	frame := [][]byte{seqFrame(1)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(200 * time.Microsecond) // idle between frames
		start := time.Now()
		if _, err := tx.WriteBatch(frame); err != nil {
			b.Fatal(err)
		}
		for n := 0; n == 0; {
			var err error
			if n, err = rx.ReadBatch(bufs, sizes, DefaultHeadroom); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}
