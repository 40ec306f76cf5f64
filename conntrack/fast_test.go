package conntrack

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// ctStep is one packet of TestExecuteKeyMatchesExecute's script.
type ctStep struct {
	name      string
	src, dst  string
	proto     uint8
	sport     uint16
	dport     uint16
	tcp       seg
	l4Short   bool // a UDP header cut short
	frag      uint8
	untracked bool
	ethType   uint16 // 0: the addresses' family
	act       Action
	keep      bool // a second ct action: the state of the step before
	advance   time.Duration
}

// stepKey builds the step's flow key, L4 bytes and IP length.
func stepKey(t *testing.T, st ctStep) (flowkeys.Key, []byte, uint32) {
	t.Helper()
	src, dst := netip.MustParseAddr(st.src), netip.MustParseAddr(st.dst)
	k := flowkeys.Key{IPProto: st.proto, IPFrag: st.frag, TpSrc: st.sport, TpDst: st.dport}
	hl := uint32(20)
	if src.Is4() {
		k.EthType, k.IPv4Src, k.IPv4Dst = 0x0800, src.As4(), dst.As4()
	} else {
		k.EthType, k.IPv6Src, k.IPv6Dst, hl = 0x86dd, src.As16(), dst.As16(), 40
	}
	if st.ethType != 0 {
		k.EthType = st.ethType
	}
	var l4 []byte
	switch st.proto {
	case ProtoTCP:
		l4 = make([]byte, 20+st.tcp.data)
		binary.BigEndian.PutUint16(l4, st.sport)
		binary.BigEndian.PutUint16(l4[2:], st.dport)
		binary.BigEndian.PutUint32(l4[4:], st.tcp.seq)
		binary.BigEndian.PutUint32(l4[8:], st.tcp.ack)
		l4[12], l4[13] = 5<<4, st.tcp.flags
		binary.BigEndian.PutUint16(l4[14:], st.tcp.win)
		k.TCPFlags = uint16(st.tcp.flags)
	case ProtoUDP:
		l4 = make([]byte, 8+20)
		binary.BigEndian.PutUint16(l4, st.sport)
		binary.BigEndian.PutUint16(l4[2:], st.dport)
		if st.l4Short {
			l4 = l4[:6]
		}
	case ProtoICMP, ProtoICMPv6:
		l4 = make([]byte, 8+20)
		l4[0] = uint8(st.sport) // type
		binary.BigEndian.PutUint16(l4[4:], st.dport)
	}
	return k, l4, hl + uint32(len(l4))
}

// TestExecuteKeyMatchesExecute runs one script of packets through two
// trackers (same seed, same clock), one by FromKey, Execute and ToKey,
// the other by ExecuteKey, and compares after every packet the error,
// the whole key, the state, the NAT rewrite, the counters and the
// table. The script takes ExecuteKey's shorter path (established UDP
// and TCP in both directions, commit with a mark on an established
// connection, an out-of-window segment, a reset, a reopened TCP
// connection, accounting) and every way out of it (a new or expired
// connection, ICMP, a UDP header cut short, a fragment, an untracked
// packet, NAT, a second ct action, another zone, IPv6, not IP).
func TestExecuteKeyMatchesExecute(t *testing.T) {
	cfg := Config{MaxConns: 64, Accounting: true}
	ref, clk1 := newTestTracker(t, cfg)
	fused, clk2 := newTestTracker(t, cfg)
	fused.tab.seed = ref.tab.seed
	// A third tracker by ConnCache.ExecuteKey, its slot chosen by the
	// source port (a connection's two directions in two slots, the
	// script's connections in one slot or another of four).
	cached, clk3 := newTestTracker(t, cfg)
	cached.tab.seed = ref.tab.seed
	cc := cached.NewConnCache(4)
	mark := Action{Commit: true, MarkValue: 7, MarkMask: 0xff}
	nat := Action{Commit: true, HasNAT: true, NAT: NATRange{Src: true, HasIP: true, IPMin: [16]byte{192, 168, 9, 1}, IPMax: [16]byte{192, 168, 9, 1}}}
	plainNAT := Action{HasNAT: true}
	z5 := Action{Zone: 5}
	const a, b = "10.0.0.1", "10.0.0.2"
	const a6, b6 = "fd00::1", "fd00::2"
	script := []ctStep{
		{name: "udp new", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, act: commit},
		{name: "udp reply", src: b, dst: a, proto: ProtoUDP, sport: 53, dport: 1000},
		{name: "udp orig est", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53},
		{name: "udp second ct", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, keep: true},
		{name: "udp commit mark", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, act: mark, advance: 3 * time.Second},
		{name: "udp marked", src: b, dst: a, proto: ProtoUDP, sport: 53, dport: 1000},
		{name: "udp assured", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53},
		{name: "udp other zone", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, act: z5},
		{name: "udp short", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, l4Short: true},
		{name: "udp fragment", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, frag: flowkeys.FragFirst},
		{name: "udp untracked", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, untracked: true},
		{name: "udp expired", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, advance: 10 * time.Minute},
		{name: "udp nat new", src: a, dst: b, proto: ProtoUDP, sport: 2000, dport: 53, act: nat},
		{name: "udp nat reply", src: b, dst: "192.168.9.1", proto: ProtoUDP, sport: 53, dport: 2000, act: plainNAT},
		{name: "udp uncommitted", src: a, dst: b, proto: ProtoUDP, sport: 3000, dport: 53},
		{name: "udp uncommitted again", src: a, dst: b, proto: ProtoUDP, sport: 3000, dport: 53},
		{name: "tcp syn", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPSyn, seq: 1000, win: 65535}, act: commit},
		{name: "tcp syn/ack", src: b, dst: a, proto: ProtoTCP, sport: 80, dport: 40000, tcp: seg{flags: TCPSyn | TCPAck, seq: 5000, ack: 1001, win: 65535}},
		{name: "tcp ack", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPAck, seq: 1001, ack: 5001, win: 65535}},
		{name: "tcp data", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPAck | TCPPsh, seq: 1001, ack: 5001, win: 65535, data: 100}, act: commit},
		{name: "tcp data ack", src: b, dst: a, proto: ProtoTCP, sport: 80, dport: 40000, tcp: seg{flags: TCPAck, seq: 5001, ack: 1101, win: 65535}},
		{name: "tcp out of window rst", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPRst, seq: 900000, win: 0}},
		{name: "tcp bad flags", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPSyn | TCPFin, seq: 1101, win: 65535}},
		{name: "tcp rst", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPRst | TCPAck, seq: 1101, ack: 5001}},
		{name: "tcp reopen", src: a, dst: b, proto: ProtoTCP, sport: 40000, dport: 80, tcp: seg{flags: TCPSyn, seq: 77000, win: 65535}, act: commit, advance: time.Second},
		{name: "tcp reopened syn/ack", src: b, dst: a, proto: ProtoTCP, sport: 80, dport: 40000, tcp: seg{flags: TCPSyn | TCPAck, seq: 9000, ack: 77001, win: 65535}},
		{name: "icmp echo", src: a, dst: b, proto: ProtoICMP, sport: 8, dport: 7, act: commit},
		{name: "icmp reply", src: b, dst: a, proto: ProtoICMP, sport: 0, dport: 7},
		{name: "ipv6 udp new", src: a6, dst: b6, proto: ProtoUDP, sport: 1000, dport: 53, act: commit},
		{name: "ipv6 udp reply", src: b6, dst: a6, proto: ProtoUDP, sport: 53, dport: 1000},
		{name: "ipv6 udp est", src: a6, dst: b6, proto: ProtoUDP, sport: 1000, dport: 53},
		{name: "not ip", src: a, dst: b, proto: ProtoUDP, sport: 1000, dport: 53, ethType: 0x0806},
	}
	// The steps that take the shorter path (it leaves Packet.Inner as
	// it was; FromKey zeroes it).
	fast := map[string]bool{"udp reply": true, "udp orig est": true, "udp commit mark": true, "udp marked": true, "udp assured": true,
		"tcp syn/ack": true, "tcp ack": true, "tcp data": true, "tcp data ack": true, "tcp out of window rst": true, "tcp bad flags": true,
		"tcp rst": true, "tcp reopened syn/ack": true, "ipv6 udp reply": true, "ipv6 udp est": true}
	sentinel := Tuple{Proto: 99}
	var s1, s2, s3 State
	for _, st := range script {
		clk1.advance(st.advance)
		clk2.advance(st.advance)
		clk3.advance(st.advance)
		if !st.keep {
			s1, s2, s3 = State{}, State{}, State{}
		}
		k1, l4, l3 := stepKey(t, st)
		k2, k3 := k1, k1
		var p1 Packet
		p2, p3 := Packet{Inner: sentinel}, Packet{Inner: sentinel}
		err1 := FromKey(&k1, l4, l3, &p1)
		if err1 == nil {
			p1.Malformed = p1.Malformed || st.untracked
			if err1 = ref.Execute(&p1, &st.act, &s1); err1 == nil {
				s1.ToKey(&k1)
			}
		}
		err2 := fused.ExecuteKey(&k2, l4, l3, st.untracked, &st.act, &s2, &p2)
		if (err1 == nil) != (err2 == nil) || err1 != nil && errors.Unwrap(err1) != errors.Unwrap(err2) && err1.Error() != err2.Error() {
			t.Fatalf("%s: Execute %v, ExecuteKey %v", st.name, err1, err2)
		}
		err3 := cc.ExecuteKey(uint32(st.sport), &k3, l4, l3, st.untracked, &st.act, &s3, &p3)
		if (err2 == nil) != (err3 == nil) || err2 != nil && err2.Error() != err3.Error() {
			t.Fatalf("%s: ExecuteKey %v, ConnCache.ExecuteKey %v", st.name, err2, err3)
		}
		if k2 != k3 || p2 != p3 || !sameState(s2, s3) {
			t.Errorf("%s: ConnCache.ExecuteKey differs from ExecuteKey:\n%+v %+v\n%+v %+v", st.name, s2, p2, s3, p3)
		}
		if sf, sc := fused.Stats(), cached.Stats(); sf != sc {
			t.Errorf("%s: counters differ with ConnCache: %+v, %+v", st.name, sf, sc)
		}
		if e2, e3 := dumpAll(t, fused), dumpAll(t, cached); !slices.Equal(e2, e3) {
			t.Errorf("%s: tables differ with ConnCache:\n%+v\n%+v", st.name, e2, e3)
		}
		if k1 != k2 {
			t.Errorf("%s: keys differ: ct_state %s/%s zone %d/%d mark %d/%d orig %v %v:%d/%v %v:%d", st.name, stateString(k1.CTState), stateString(k2.CTState),
				k1.CTZone, k2.CTZone, k1.CTMark, k2.CTMark, k1.CTOrigIPv4Src, k1.CTOrigIPv4Dst, k1.CTOrigTpSrc, k2.CTOrigIPv4Src, k2.CTOrigIPv4Dst, k2.CTOrigTpSrc)
		}
		if s1.Flags != s2.Flags || s1.Zone != s2.Zone || s1.Mark != s2.Mark || s1.Labels != s2.Labels || s1.Orig != s2.Orig || s1.HasOrig != s2.HasOrig ||
			(s1.c == nil) != (s2.c == nil) || s1.dir != s2.dir || s1.info != s2.info {
			t.Errorf("%s: states differ:\n%+v\n%+v", st.name, s1, s2)
		}
		if p1.Rewritten != p2.Rewritten || p1.Rewritten != 0 && (p1.Tuple != p2.Tuple || p1.Inner != p2.Inner) {
			t.Errorf("%s: rewrites differ: %#x %v, %#x %v", st.name, p1.Rewritten, p1.Tuple, p2.Rewritten, p2.Tuple)
		}
		if sr, sf := ref.Stats(), fused.Stats(); sr != sf {
			t.Errorf("%s: counters differ: %+v, %+v", st.name, sr, sf)
		}
		if e1, e2 := dumpAll(t, ref), dumpAll(t, fused); !slices.Equal(e1, e2) {
			t.Errorf("%s: tables differ:\n%+v\n%+v", st.name, e1, e2)
		}
		if took := p2.Inner == sentinel; took != fast[st.name] {
			t.Errorf("%s: shorter path taken %v, want %v", st.name, took, fast[st.name])
		}
	}
}

// dumpAll returns every entry of the tracker, in a stable order.
func dumpAll(t *testing.T, tr *Tracker) []Entry {
	t.Helper()
	var es []Entry
	if err := tr.Dump(Filter{}, func(e *Entry) error { es = append(es, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(es, func(x, y Entry) int {
		if c := slices.Compare(x.Orig.Src[:], y.Orig.Src[:]); c != 0 {
			return c
		}
		if c := slices.Compare(x.Orig.Dst[:], y.Orig.Dst[:]); c != 0 {
			return c
		}
		return int(x.Orig.SrcPort)<<16 + int(x.Orig.DstPort) + int(x.Zone)<<32 - (int(y.Orig.SrcPort)<<16 + int(y.Orig.DstPort) + int(y.Zone)<<32)
	})
	return es
}

// sameState reports whether two trackers' states are alike: every
// field, and a connection in both or neither.
func sameState(a, b State) bool {
	if (a.c == nil) != (b.c == nil) {
		return false
	}
	a.c, b.c = nil, nil
	return a == b
}
