//go:build integration && linux && !genl_stub

package genl

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/conntrack"
	"github.com/ovsdp/ovsdp/internal/kernelct"
	"github.com/ovsdp/ovsdp/odp"
)

// ctBenchZone is the zone BenchmarkIntegrationCTSetup commits in.
const ctBenchZone = 4242

// tcpSYN is an Ethernet/IPv4/TCP SYN from 10.(i>>16).(i>>8).(i) port
// 1024+i%50000 to 192.168.0.1:80, with correct checksums (the kernel's
// conntrack checks them on the ct action's hook).
func tcpSYN(i int) []byte {
	f := make([]byte, 14+20+20)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(ip[2:], 40)
	copy(ip[12:], []byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
	copy(ip[16:], []byte{192, 168, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], ^onesSum(ip, 0))
	tcp := f[34:]
	binary.BigEndian.PutUint16(tcp, uint16(1024+i%50000))
	binary.BigEndian.PutUint16(tcp[2:], 80)
	binary.BigEndian.PutUint32(tcp[4:], uint32(i)*7919)
	tcp[12], tcp[13] = 5<<4, 0x02
	binary.BigEndian.PutUint16(tcp[14:], 65535)
	var pseudo [12]byte
	copy(pseudo[:], ip[12:20])
	pseudo[9] = 6
	binary.BigEndian.PutUint16(pseudo[10:], 20)
	binary.BigEndian.PutUint16(tcp[16:], ^onesSum(tcp, onesSum(pseudo[:], 0)))
	return f
}

// onesSum is the ones'-complement sum of b added to s.
func onesSum(b []byte, s uint16) uint16 {
	sum := uint32(s)
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// slabObjSize is the object size of a /proc/slabinfo cache.
func slabObjSize(name string) (int, error) {
	f, err := os.Open("/proc/slabinfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name <active_objs> <num_objs> <objsize> ...
		fs := strings.Fields(sc.Text())
		if len(fs) > 3 && fs[0] == name {
			return strconv.Atoi(fs[3])
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/slabinfo has no %s cache", name)
}

// BenchmarkIntegrationCTSetup is issue 15's setup rate and memory per
// connection, kernel and ours side by side in the same VM run: n new TCP
// connections (one SYN each, distinct tuples) committed by the kernel's
// conntrack through the openvswitch module (ct(commit,zone=4242)
// executed on a kernel datapath, 1,000 packets per ExecuteBatch: the
// rate includes the netlink requests, which the kernel's own receive
// path would not pay), and by the userspace tracker (Tracker.Execute
// with commit, one goroutine: no netlink). Both are timed by the wall
// clock of one goroutine. Memory: the kernel's nf_conntrack slab object
// (/proc/slabinfo's objsize; the conntrack extensions it allocates
// beside it are not counted), ours the heap per connection
// (runtime.MemStats after GC). CT_BENCH_CONNS sets n (default 20,000).
func BenchmarkIntegrationCTSetup(b *testing.B) {
	n := 20000
	if s := os.Getenv("CT_BENCH_CONNS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			b.Fatalf("CT_BENCH_CONNS=%q: want a positive number of connections", s)
		}
	}
	kernelClient(b) // root and the module, or the reason
	d := newKernelDP(b)
	kt, err := kernelct.Open()
	if err != nil {
		b.Fatalf("opening the kernel's conntrack table: %v", err)
	}
	defer kt.Close()
	ctx := context.Background()
	zone := odp.CTFilter{HasZone: true, Zone: ctBenchZone}
	if max, err := kt.MaxConns(ctx); err == nil && max < uint32(2*n) {
		if err := kt.SetMaxConns(ctx, uint32(2*n)); err != nil {
			b.Fatalf("nf_conntrack_max is %d, below %d connections, and raising it failed: %v", max, n, err)
		}
	}
	key, err := odp.ParseKey("in_port(0)")
	if err != nil {
		b.Fatal(err)
	}
	acts := odp.Actions{odp.CT{Commit: true, Zone: ctBenchZone, HasZone: true}}
	pkts := make([]*odp.Packet, n)
	for i := range pkts {
		pkts[i] = &odp.Packet{Data: tcpSYN(i), Key: key, Actions: acts}
	}
	var kernel, ours time.Duration
	var oursBytes float64
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		if err := kt.FlushConntrack(ctx, zone); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		for i := 0; i < n; i += 1000 {
			errs, err := d.ExecuteBatch(ctx, pkts[i:min(i+1000, n)])
			if err != nil {
				b.Fatal(err)
			}
			for j, e := range errs {
				if e != nil {
					b.Fatalf("packet %d: %v", i+j, e)
				}
			}
		}
		kernel += time.Since(t0)
		b.StopTimer()
		got := 0
		if err := kt.DumpConntrack(ctx, zone, func(*odp.CTEntry) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("the kernel's zone %d holds %d connections after %d SYNs committed", ctBenchZone, got, n)
		}
		ps := make([]conntrack.Packet, n)
		for i := range ps {
			var t conntrack.Tuple
			t.Proto = conntrack.ProtoTCP
			copy(t.Src[:4], []byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
			copy(t.Dst[:4], []byte{192, 168, 0, 1})
			t.SrcPort, t.DstPort = uint16(1024+i%50000), 80
			ps[i] = conntrack.Packet{Tuple: t, Len: 40, TCP: conntrack.TCPInfo{Flags: conntrack.TCPSyn, Seq: uint32(i) * 7919, Window: 65535}}
		}
		a := conntrack.Action{Commit: true, Zone: ctBenchZone}
		// The heap from before the tracker is made: its objects and its
		// bucket array, as conntrack's BenchmarkBytesPerConn counts.
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		tr := conntrack.New(conntrack.Config{MaxConns: uint32(2 * n)})
		b.StartTimer()
		t1 := time.Now()
		for i := range ps {
			var s conntrack.State
			if err := tr.Execute(&ps[i], &a, &s); err != nil {
				b.Fatalf("ours, connection %d: %v", i, err)
			}
		}
		ours += time.Since(t1)
		b.StopTimer()
		runtime.GC()
		var m2 runtime.MemStats
		runtime.ReadMemStats(&m2)
		oursBytes += (float64(m2.HeapAlloc) - float64(m1.HeapAlloc)) / float64(n)
		if c := tr.Count(); c != n {
			b.Fatalf("ours holds %d connections after %d SYNs committed", c, n)
		}
		runtime.KeepAlive(ps)
		b.StartTimer()
	}
	b.StopTimer()
	if err := kt.FlushConntrack(ctx, zone); err != nil {
		b.Fatal(err)
	}
	obj, err := slabObjSize("nf_conntrack")
	if err != nil {
		b.Fatalf("the kernel's memory per connection: %v", err)
	}
	total := float64(n * b.N)
	b.ReportMetric(total/kernel.Seconds(), "kernel-conns/s")
	b.ReportMetric(total/ours.Seconds(), "ours-conns/s")
	b.ReportMetric(float64(obj), "kernel-bytes/conn")
	b.ReportMetric(oursBytes/float64(b.N), "ours-bytes/conn")
}
