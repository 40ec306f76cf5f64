package userdp

import (
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkNetdevRxXDP is BenchmarkNetdevRx for NetdevXDP (which is not
// in netdevModes: it fails the tests that need the kernel's checksum
// status and out-of-band VLAN transmit): the same 64-byte frames, sent
// in batches of 64 by a sendmmsg port at the other end of the veth, read
// in batches of 64. Run it in the same go test run as BenchmarkNetdevRx
// (-bench 'NetdevRx') to compare the modes.
func BenchmarkNetdevRxXDP(b *testing.B) {
	rx, tx, _ := xdpPair(b, NetdevMmsg)
	pkts := make([][]byte, 64)
	for i := range pkts {
		pkts[i] = udpFrame64(i)
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, BufferSize(rx.MTU()))
	}
	sizes := make([]int, 64)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			tx.WriteBatch(pkts)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	for got < b.N {
		n, err := rx.ReadBatch(bufs, sizes, DefaultHeadroom)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(got)/b.Elapsed().Seconds()/1e6, "Mpps")
	st := rx.Stats()
	b.ReportMetric(float64(st.RxDropped)/float64(st.RxDropped+st.RxPackets), "dropfrac")
}

// BenchmarkNetdevTxXDP is BenchmarkNetdevTx for NetdevXDP: 64-byte
// frames written in batches of 64 to a veth end (the peer's stack drops
// them).
func BenchmarkNetdevTxXDP(b *testing.B) {
	tx, _, _ := xdpPair(b, NetdevMmsg)
	pkts := make([][]byte, 64)
	for i := range pkts {
		pkts[i] = udpFrame64(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n, err := tx.WriteBatch(pkts)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds()/1e6, "Mpps")
}
