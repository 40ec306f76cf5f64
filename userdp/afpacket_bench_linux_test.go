package userdp

import (
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkNetdevRx measures how fast a netdev port reads 64-byte UDP
// frames (60 bytes + FCS) arriving on one end of a veth pair, sent in
// batches of 64 by a sendmmsg port on the other end (in a namespace), per
// read implementation. Run as root:
//
//	go test -run XXX -bench NetdevRx -benchtime 2000000x ./userdp
//
// The Mpps metric is frames read per second of the benchmark's run (the
// sender runs on the other core, so this is the reader's rate when the
// two cores are shared with the sender and the kernel's veth work).
func BenchmarkNetdevRx(b *testing.B) {
	// NetdevXDP is measured beside the AF_PACKET modes though it is not
	// in netdevModes (it fails tests that need the kernel's checksum
	// status and out-of-band VLAN tags).
	for _, mode := range append(netdevModes[:len(netdevModes):len(netdevModes)], NetdevXDP) {
		b.Run(mode.String(), func(b *testing.B) {
			rx, tx := netdevPair(b, mode)
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
			if r, ok := rx.(*RingPort); ok {
				// The share of the frames read from the slot lane.
				b.ReportMetric(float64(r.lanes.frames[0])/float64(r.lanes.frames[0]+r.lanes.frames[1]), "slotfrac")
				b.ReportMetric(float64(r.lanes.switches), "switches")
			}
		})
	}
}

// BenchmarkNetdevTx measures writes of 64-byte frames in batches of 64
// to a veth end (the peer's stack drops them): sendmmsg (the ring and
// mmsg modes) and AF_XDP.
func BenchmarkNetdevTx(b *testing.B) {
	for _, mode := range []NetdevMode{NetdevMmsg, NetdevXDP} {
		b.Run(mode.String(), func(b *testing.B) {
			tx, _ := netdevPair(b, mode)
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
		})
	}
}
