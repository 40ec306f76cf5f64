package sweep

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

const nflows = 1000

// flowSpec is one flow of the sweep and a packet that matches it.
type flowSpec struct {
	text  string
	frame []byte
}

// maskText gives mask number j: a source prefix of 0-32 bits, an exact,
// /24 or /16 destination, the UDP source port exact or not.
func maskText(j int, src, dst [4]byte, sport uint16) string {
	sp := j % 33
	dl := []int{32, 24, 16}[(j/33)%3]
	m := func(bits int) string {
		v := uint32(0)
		if bits > 0 {
			v = ^uint32(0) << (32 - bits)
		}
		return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&255, v>>8&255, v&255)
	}
	s := fmt.Sprintf("in_port(1),eth(),eth_type(0x0800),ipv4(src=%d.%d.%d.%d/%s,dst=%d.%d.%d.%d/%s,proto=17,frag=no)",
		src[0], src[1], src[2], src[3], m(sp), dst[0], dst[1], dst[2], dst[3], m(dl))
	if (j/99)%2 == 1 {
		s += fmt.Sprintf(",udp(src=%d,dst=0/0)", sport)
	} else {
		s += ",udp(src=0/0,dst=0/0)"
	}
	return s
}

// udpFrame is a 60-byte Ethernet/IPv4/UDP frame.
func udpFrame(src, dst [4]byte, sport, dport uint16) []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 46) // 20 + 8 + 18 bytes of payload
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
	binary.BigEndian.PutUint16(f[34:], sport)
	binary.BigEndian.PutUint16(f[36:], dport)
	binary.BigEndian.PutUint16(f[38:], 26)
	return f
}

// fixture is nflows flows over nmasks masks, as text and as flowkeys.
type fixture struct {
	flows       []flowSpec
	keys, masks []flowkeys.Key
}

func newFixture(tb testing.TB, nmasks int) *fixture {
	rng := rand.New(rand.NewPCG(uint64(nmasks), 42))
	fx := &fixture{}
	seen := map[[2]flowkeys.Key]bool{}
	for len(fx.flows) < nflows {
		j := len(fx.flows) % nmasks
		var src, dst [4]byte
		binary.BigEndian.PutUint32(src[:], rng.Uint32())
		binary.BigEndian.PutUint32(dst[:], rng.Uint32())
		sport, dport := uint16(rng.Uint32()), uint16(rng.Uint32())
		text := maskText(j, src, dst, sport)
		key, mask, err := odp.ParseMaskedKey(text)
		if err != nil {
			tb.Fatalf("%s: %v", text, err)
		}
		k, m, err := odp.ToFlowKeys(key, mask)
		if err != nil {
			tb.Fatalf("%s: %v", text, err)
		}
		if seen[[2]flowkeys.Key{k, m}] {
			continue
		}
		seen[[2]flowkeys.Key{k, m}] = true
		fx.flows = append(fx.flows, flowSpec{text: text, frame: udpFrame(src, dst, sport, dport)})
		fx.keys = append(fx.keys, k)
		fx.masks = append(fx.masks, m)
	}
	return fx
}

// naive is the plain tuple-space search of the Linux patch's era: one
// hash table per mask, tried in turn; jhash2 over the mask's range; a
// byte-by-byte compare.
type naive struct {
	masks  []flowkeys.Key
	ranges []flowkeys.Range
	tables []map[uint32][]flowkeys.Key
}

func newNaive(fx *fixture) *naive {
	n := &naive{}
	idx := map[flowkeys.Key]int{}
	for i := range fx.keys {
		mi, ok := idx[fx.masks[i]]
		if !ok {
			mi = len(n.masks)
			idx[fx.masks[i]] = mi
			n.masks = append(n.masks, fx.masks[i])
			n.ranges = append(n.ranges, fx.masks[i].Range())
			n.tables = append(n.tables, map[uint32][]flowkeys.Key{})
		}
		h := flowkeys.HashJHash2(&fx.keys[i], n.ranges[mi], 0)
		n.tables[mi][h] = append(n.tables[mi][h], fx.keys[i])
	}
	return n
}

func (n *naive) lookup(k, tmp *flowkeys.Key) bool {
	for i := range n.masks {
		r := n.ranges[i]
		flowkeys.ApplyMask(tmp, k, &n.masks[i], r)
		for _, c := range n.tables[i][flowkeys.HashJHash2(tmp, r, 0)] {
			a, b := tmp.Bytes()[8*r.Start:8*r.End], c.Bytes()[8*r.Start:8*r.End]
			eq := true
			for j := range a {
				if a[j] != b[j] {
					eq = false
					break
				}
			}
			if eq {
				return true
			}
		}
	}
	return false
}

// srcPort delivers the fixture's frames, as many as have been asked for.
type srcPort struct {
	frames  [][]byte
	ask     chan int
	closed  chan struct{}
	pending int
	next    int
}

func (p *srcPort) Name() string         { return "src" }
func (p *srcPort) Type() odp.PortType   { return userdp.PortMemory }
func (p *srcPort) MTU() int             { return 1500 }
func (p *srcPort) Stats() odp.PortStats { return odp.PortStats{} }
func (p *srcPort) Close() error {
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	return nil
}
func (p *srcPort) WriteBatch(pkts [][]byte) (int, error) { return len(pkts), nil }
func (p *srcPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	for p.pending == 0 {
		select {
		case n := <-p.ask:
			p.pending += n
		case <-p.closed:
			return 0, userdp.ErrPortClosed
		}
	}
	n := min(p.pending, len(bufs))
	for i := 0; i < n; i++ {
		f := p.frames[p.next]
		p.next = (p.next + 1) % len(p.frames)
		sizes[i] = copy(bufs[i][offset:], f)
	}
	p.pending -= n
	return n, nil
}

// sinkPort counts what the datapath sends it.
type sinkPort struct {
	tx     atomic.Uint64
	closed chan struct{}
}

func (p *sinkPort) Name() string         { return "sink" }
func (p *sinkPort) Type() odp.PortType   { return userdp.PortMemory }
func (p *sinkPort) MTU() int             { return 1500 }
func (p *sinkPort) Stats() odp.PortStats { return odp.PortStats{TxPackets: p.tx.Load()} }
func (p *sinkPort) Close() error {
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	return nil
}
func (p *sinkPort) WriteBatch(pkts [][]byte) (int, error) {
	p.tx.Add(uint64(len(pkts)))
	return len(pkts), nil
}
func (p *sinkPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	<-p.closed
	return 0, userdp.ErrPortClosed
}

// newDatapath is a userdp datapath with the fixture's flows (actions: 2).
func newDatapath(tb testing.TB, fx *fixture, cache int) (*srcPort, *sinkPort) {
	dp, err := userdp.New(fmt.Sprintf("sweep%d", rand.IntN(1e6)), userdp.WithoutLocalPort(), userdp.WithCacheEntries(cache))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dp.Close() })
	src := &srcPort{ask: make(chan int, 4096), closed: make(chan struct{})}
	for _, f := range fx.flows {
		src.frames = append(src.frames, f.frame)
	}
	sink := &sinkPort{closed: make(chan struct{})}
	if _, err := dp.AttachPort(src, 1); err != nil {
		tb.Fatal(err)
	}
	if _, err := dp.AttachPort(sink, 2); err != nil {
		tb.Fatal(err)
	}
	acts := odp.Actions{odp.Output{Port: 2}}
	for i, f := range fx.flows {
		key, mask, err := odp.ParseMaskedKey(f.text)
		if err != nil {
			tb.Fatal(err)
		}
		fl := &odp.Flow{Key: key, Mask: mask, Actions: acts, UFID: odp.UFID{byte(i), byte(i >> 8), 0x5e}}
		if _, err := dp.PutFlow(context.Background(), fl, odp.PutCreate); err != nil && !errors.Is(err, syscall.EEXIST) {
			tb.Fatalf("flow %d %s: %v", i, f.text, err)
		}
	}
	return src, sink
}

// push sends n frames through the datapath and waits until they are out.
func push(tb testing.TB, src *srcPort, sink *sinkPort, n int) {
	want := sink.tx.Load() + uint64(n)
	for sent := 0; sent < n; sent += 64 {
		src.ask <- min(64, n-sent)
	}
	deadline := time.Now().Add(60 * time.Second)
	for sink.tx.Load() < want {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d frames came out (misses?)", sink.tx.Load()+uint64(n)-want, n)
		}
		time.Sleep(5 * time.Microsecond)
	}
}

func TestFixtureHits(t *testing.T) {
	for _, nm := range []int{1, 100} {
		fx := newFixture(t, nm)
		nv := newNaive(fx)
		if len(nv.masks) != nm {
			t.Errorf("%d masks, want %d", len(nv.masks), nm)
		}
		var k, tmp flowkeys.Key
		for i, f := range fx.flows {
			if err := flowkeys.Extract(f.frame, &flowkeys.Metadata{InPort: 1}, &k); err != nil {
				t.Fatal(err)
			}
			if !nv.lookup(&k, &tmp) {
				t.Fatalf("naive lookup misses flow %d %s", i, f.text)
			}
		}
		src, sink := newDatapath(t, fx, userdp.DefaultCacheEntries)
		push(t, src, sink, 2*nflows)
	}
}

// BenchmarkMaskSweep: ns per packet against the number of masks (1,000
// flows): userdp's whole pipeline (extract, cache/subtable lookup, output)
// with the cache on and off, and the baseline's extract + plain
// tuple-space lookup, in the same run.
func BenchmarkMaskSweep(b *testing.B) {
	for _, nm := range []int{1, 5, 10, 20, 50, 100} {
		fx := newFixture(b, nm)
		nv := newNaive(fx)
		b.Run(fmt.Sprintf("masks=%d/baseline", nm), func(b *testing.B) {
			var k, tmp flowkeys.Key
			md := &flowkeys.Metadata{InPort: 1}
			for i := 0; i < b.N; i++ {
				flowkeys.Extract(fx.flows[i%nflows].frame, md, &k)
				if !nv.lookup(&k, &tmp) {
					b.Fatal("miss")
				}
			}
		})
		for _, c := range []struct {
			name string
			n    int
		}{{"userdp-cache", userdp.DefaultCacheEntries}, {"userdp-nocache", 0}} {
			b.Run(fmt.Sprintf("masks=%d/%s", nm, c.name), func(b *testing.B) {
				src, sink := newDatapath(b, fx, c.n)
				push(b, src, sink, 2*nflows) // warm up (cache, subtable ranking)
				b.ResetTimer()
				push(b, src, sink, b.N)
			})
		}
	}
}
