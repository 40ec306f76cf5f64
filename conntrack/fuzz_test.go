package conntrack

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// fuzzPacket is one packet of a fuzz input (see fuzzPackets).
type fuzzPacket struct {
	k       flowkeys.Key
	l4      []byte
	a       Action
	fresh   bool          // a state of its own, not the last one of its source
	advance time.Duration // the clock's step after it
}

// fuzzPackets cuts a fuzz input into packets: each chunk is a 4-byte
// header of choices (protocol, addresses from a small set so that
// packets meet their connections, direction, zone, commit, NAT, clock
// steps) and up to 63 L4 bytes. hashNAT makes every NAT port choice
// the seeded hash's, not a random one.
func fuzzPackets(data []byte, hashNAT bool, fn func(fp *fuzzPacket)) {
	protos := [...]uint8{ProtoTCP, ProtoUDP, ProtoICMP, ProtoICMPv6, 47, 132}
	for len(data) >= 4 {
		hdr := data[:4]
		n := int(hdr[3] % 64)
		data = data[4:]
		if n > len(data) {
			n = len(data)
		}
		fp := fuzzPacket{l4: data[:n], fresh: hdr[2]&0x40 != 0, advance: time.Duration(hdr[1]) * time.Second}
		data = data[n:]
		k := &fp.k
		v6 := hdr[0]&0x80 != 0
		k.IPProto = protos[int(hdr[0]&0x7f)%len(protos)]
		if v6 {
			k.EthType = 0x86dd
			k.IPv6Src[15], k.IPv6Dst[15] = hdr[1]&3, hdr[1]>>2&3
		} else {
			k.EthType = 0x0800
			k.IPv4Src = [4]byte{10, 0, 0, hdr[1] & 3}
			k.IPv4Dst = [4]byte{10, 0, 0, hdr[1] >> 2 & 3}
		}
		if hdr[2]&0x80 != 0 {
			k.IPFrag = flowkeys.FragFirst
		}
		a := &fp.a
		*a = Action{Commit: hdr[2]&1 != 0, Force: hdr[2]&2 != 0, Zone: uint16(hdr[2] >> 2 & 1)}
		if hdr[2]&4 != 0 {
			a.MarkValue, a.MarkMask = uint32(hdr[1]), 0xff
		}
		switch hdr[2] >> 3 & 3 {
		case 1:
			a.HasNAT = true
		case 2:
			a.HasNAT, a.NAT = true, NATRange{Src: true, HasIP: true, V6: v6, HasProto: true, ProtoMin: 100, ProtoMax: 101, Hash: hashNAT}
			a.NAT.IPMin[0], a.NAT.IPMax[0] = 192, 192
			if !v6 {
				a.NAT.IPMin[3], a.NAT.IPMax[3] = 1, 2
			}
		case 3:
			a.HasNAT, a.NAT = true, NATRange{Dst: true, HasIP: true, V6: v6, IPMin: a.NAT.IPMin, Hash: hashNAT}
			a.NAT.IPMin[0] = 10
			a.NAT.IPMax = a.NAT.IPMin
		}
		fn(&fp)
	}
}

// fuzzSeeds are both fuzz targets' seeds.
var fuzzSeeds = []string{
	"\x06\x00\x00\x00\x50\x00\x00\x00\x01\x00\x00\x00\x00\x50\x02\xff\xff\x00\x00\x00\x00",
	"\x11\x01\x02\x03\x00\x35\x00\x35\x00\x08\x00\x00",
	"\x01\x04\x00\x00\x08\x00\x00\x00\x00\x07\x00\x01\x03\x03\x00\x00\x00\x00\x00\x00\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x00\x35\x00\x35",
}

// fuzzTrackers runs fn on every input of a fuzz target (fuzzSeeds
// first), with n trackers of 64 connections on one fake clock, with
// zone 1 limited to 3, seeded alike (acct: with Accounting).
func fuzzTrackers(f *testing.F, n int, acct bool, fn func(t *testing.T, data []byte, clk *fakeClock, trs []*Tracker)) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		clk := &fakeClock{}
		clk.t.Store(1)
		trs := make([]*Tracker, n)
		for i := range trs {
			trs[i] = New(Config{MaxConns: 64, Clock: clk.now, Accounting: acct})
			trs[i].tab.seed = trs[0].tab.seed
			trs[i].SetZoneLimit(1, 3)
		}
		fn(t, data, clk, trs)
	})
}

// FuzzTracker drives the tracker's input path with arbitrary packets
// (fuzzPackets), on a table with a hot cache of one line. Nothing may
// panic, every error must be one of Execute's, and the counts must
// agree with a dump after the run.
func FuzzTracker(f *testing.F) {
	fuzzTrackers(f, 1, false, func(t *testing.T, data []byte, clk *fakeClock, trs []*Tracker) {
		tr := trs[0]
		tr.tab.withHot(1)
		states := map[uint32]State{}
		fuzzPackets(data, false, func(fp *fuzzPacket) {
			var p Packet
			if err := FromKey(&fp.k, fp.l4, uint32(len(fp.l4)+20), &p); err != nil {
				if err != ErrFragment {
					t.Fatalf("FromKey: %v", err)
				}
				return
			}
			key := binary.BigEndian.Uint32(p.Tuple.Src[12:]) ^ uint32(p.Tuple.Src[3])
			s := states[key]
			if fp.fresh {
				s = State{}
			}
			err := tr.Execute(&p, &fp.a, &s)
			switch err {
			case nil:
				if s.Flags&StateTracked == 0 {
					t.Fatalf("ct_state %#x without +trk", s.Flags)
				}
				if s.Flags&StateInvalid != 0 && s.Flags&(StateNew|StateEstablished|StateRelated) != 0 {
					t.Fatalf("ct_state %s", stateString(s.Flags))
				}
			default:
				for _, e := range []error{ErrTableFull, ErrZoneLimit, ErrNATExhausted, ErrClash, ErrNATFamily} {
					if errors.Is(err, e) {
						err = nil
					}
				}
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
			}
			states[key] = s
			clk.advance(fp.advance)
		})
		tr.Sweep()
		n := 0
		tr.Dump(Filter{}, func(*Entry) error { n++; return nil })
		if n != tr.Count() {
			t.Fatalf("dump has %d entries, count %d", n, tr.Count())
		}
		if _, z1, _ := tr.ZoneLimit(1); z1 > 3 {
			t.Fatalf("zone 1 holds %d connections over its limit 3", z1)
		}
	})
}

// FuzzExecuteKey runs the same packets (fuzzPackets, NAT ports by
// hash) through three trackers of one seed and clock, one by FromKey,
// Execute and ToKey, one by ExecuteKey, one by a ConnCache's
// ExecuteKey (two slots, the packet's source address picking one), and
// requires the same error, key, state, rewrite, counters and table
// after every packet. The first has no hot cache (a table of 64
// connections has none), the other two a hot cache of one line, whose
// six slots every lookup's remember replaces in turn.
func FuzzExecuteKey(f *testing.F) {
	fuzzTrackers(f, 3, true, func(t *testing.T, data []byte, clk *fakeClock, trs []*Tracker) {
		ref, fused := trs[0], trs[1]
		fused.tab.withHot(1)
		trs[2].tab.withHot(1)
		cc := trs[2].NewConnCache(2)
		type pair struct{ s1, s2, s3 State }
		states := map[uint32]pair{}
		fuzzPackets(data, true, func(fp *fuzzPacket) {
			key := uint32(fp.k.IPv4Src[3]) ^ uint32(fp.k.IPv6Src[15])<<8
			st := states[key]
			if fp.fresh {
				st = pair{}
			}
			k1, k2, k3 := fp.k, fp.k, fp.k
			l3 := uint32(len(fp.l4) + 20)
			var p1, p2, p3 Packet
			err1 := FromKey(&k1, fp.l4, l3, &p1)
			if err1 == nil {
				if err1 = ref.Execute(&p1, &fp.a, &st.s1); err1 == nil {
					st.s1.ToKey(&k1)
				}
			}
			err2 := fused.ExecuteKey(&k2, fp.l4, l3, false, &fp.a, &st.s2, &p2)
			if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
				t.Fatalf("errors differ: %v, %v", err1, err2)
			}
			err3 := cc.ExecuteKey(key, &k3, fp.l4, l3, false, &fp.a, &st.s3, &p3)
			if (err2 == nil) != (err3 == nil) || err2 != nil && err2.Error() != err3.Error() {
				t.Fatalf("errors differ with ConnCache: %v, %v", err2, err3)
			}
			if err2 == nil && (k2 != k3 || p2 != p3 || !sameState(st.s2, st.s3)) {
				t.Fatalf("ConnCache.ExecuteKey differs from ExecuteKey:\n%+v %+v\n%+v %+v", st.s2, p2, st.s3, p3)
			}
			if s2, s3 := fused.Stats(), trs[2].Stats(); s2 != s3 {
				t.Fatalf("counters differ with ConnCache: %+v, %+v", s2, s3)
			}
			if e2, e3 := dumpAll(t, fused), dumpAll(t, trs[2]); !slices.Equal(e2, e3) {
				t.Fatalf("tables differ with ConnCache:\n%+v\n%+v", e2, e3)
			}
			if err1 == nil {
				if k1 != k2 {
					t.Fatalf("keys differ: ct_state %s, %s", stateString(k1.CTState), stateString(k2.CTState))
				}
				s1, s2 := st.s1, st.s2
				if s1.Flags != s2.Flags || s1.Zone != s2.Zone || s1.Mark != s2.Mark || s1.Labels != s2.Labels || s1.Orig != s2.Orig || s1.HasOrig != s2.HasOrig {
					t.Fatalf("states differ:\n%+v\n%+v", s1, s2)
				}
				if p1.Rewritten != p2.Rewritten || p1.Rewritten != 0 && (p1.Tuple != p2.Tuple || p1.Inner != p2.Inner) {
					t.Fatalf("rewrites differ: %#x %v, %#x %v", p1.Rewritten, p1.Tuple, p2.Rewritten, p2.Tuple)
				}
			}
			if s1, s2 := ref.Stats(), fused.Stats(); s1 != s2 {
				t.Fatalf("counters differ: %+v, %+v", s1, s2)
			}
			if e1, e2 := dumpAll(t, ref), dumpAll(t, fused); !slices.Equal(e1, e2) {
				t.Fatalf("tables differ:\n%+v\n%+v", e1, e2)
			}
			states[key] = st
			clk.advance(fp.advance)
		})
	})
}
