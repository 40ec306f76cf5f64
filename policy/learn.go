package policy

import (
	"fmt"
	"sync"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys"
)

// DefaultMaxAge is how long a learned MAC address stays without being
// seen again (as in Open vSwitch).
const DefaultMaxAge = 300 * time.Second

// DefaultMaxEntries bounds the MAC table.
const DefaultMaxEntries = 8192

// LearningOptions configure a LearningSwitch. The zero value gives the
// defaults.
type LearningOptions struct {
	// MaxAge is how long an entry lives after the address was last seen
	// (DefaultMaxAge when zero).
	MaxAge time.Duration
	// MaxEntries bounds the table (DefaultMaxEntries when zero). When it
	// is full, a new address takes the place of an aged-out entry if
	// there is one, otherwise of the least recently seen entry of the
	// port that has the most entries (Open vSwitch's fair eviction): a
	// flood of new addresses on one port evicts only that port's
	// addresses, never those learned on the other ports.
	MaxEntries int
	// Now is the clock (time.Now when nil); tests inject their own.
	Now func() time.Time
	// OnEvent, if set, is called for every event, after the switch's
	// lock is released, in the goroutine that caused it.
	OnEvent func(Event)
}

// EventKind says what changed in the MAC table.
type EventKind uint8

// Event kinds.
const (
	// Learned: a new address was learned on Port.
	Learned EventKind = iota + 1
	// Moved: a known address was seen on Port, having been on OldPort.
	Moved
	// Expired: the address, last on OldPort, aged out or was forgotten.
	Expired
	// Evicted: the address, last on OldPort, was dropped before it aged
	// out to make room for a new one (the table was full).
	Evicted
)

// String names the kind.
func (k EventKind) String() string {
	if s, ok := eventKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

var eventKindNames = map[EventKind]string{Learned: "learned", Moved: "moved", Expired: "expired", Evicted: "evicted"}

// Event is a change of the MAC table. Every flow whose decision used
// "normal" (Decision.Normal) with this Ethernet destination must be
// revalidated: its output port changed (or it flooded and need not any
// more, or the other way round).
type Event struct {
	Kind EventKind
	MAC  [6]byte
	// VLAN is the VLAN the address was learned in (0 on ports without
	// VLAN configuration and for untagged frames on trunks).
	VLAN    uint16
	Port    uint32 // new port (Learned, Moved)
	OldPort uint32 // previous port (Moved, Expired, Evicted)
}

// String describes the event.
func (e Event) String() string {
	mac := fmtMAC(e.MAC)
	if e.VLAN != 0 {
		mac = fmt.Sprintf("%s (vlan %d)", mac, e.VLAN)
	}
	switch e.Kind {
	case Learned:
		return fmt.Sprintf("%s learned on port %d", mac, e.Port)
	case Moved:
		return fmt.Sprintf("%s moved from port %d to port %d", mac, e.OldPort, e.Port)
	case Evicted:
		return fmt.Sprintf("%s evicted from port %d (table full)", mac, e.OldPort)
	}
	return fmt.Sprintf("%s expired from port %d", mac, e.OldPort)
}

// LearningStats are the switch's counters.
type LearningStats struct {
	Entries                 int
	Learned, Moved, Expired uint64
	// Evicted counts entries dropped before they aged out to make room
	// for a new address.
	Evicted uint64
}

// none marks the end of a list of entries.
const none = -1

// macEntry is one learned address. Every entry is on two lists ordered
// by when it was last seen, newest first: the table's and its port's.
type macEntry struct {
	mac          macKey
	port         uint32
	seen         time.Time
	prev, next   int32 // the table's list; next links the free list too
	pprev, pnext int32 // the port's list
}

// macKey is what the table is keyed by: an address in a VLAN.
type macKey struct {
	mac  [6]byte
	vlan uint16
}

// portList is the list of one port's entries, and the port's place in
// the heap of ports ordered by their number of entries.
type portList struct {
	port       uint32
	head, tail int32
	n          int
	heap       int
}

// LearningSwitch is an L2 learning switch: it learns which port each
// Ethernet source address is on, forwards to the known port, and floods
// broadcast, multicast and unknown destinations. It is safe for
// concurrent use.
//
// Learning, looking up and evicting take constant time whatever the
// table's size (evicting is logarithmic in the number of ports): the
// entries are on a least-recently-seen list, and on one such list per
// port, beside the index by address.
//
// The switch keys its table by (VLAN, MAC address), as Open vSwitch's
// mac-learning table does: the same address may be on different ports
// in different VLANs.
type LearningSwitch struct {
	maxAge time.Duration
	max    int
	now    func() time.Time
	on     func(Event)

	mu         sync.RWMutex
	index      map[macKey]int32
	ents       []macEntry
	free       int32
	head, tail int32 // newest and oldest entry
	ports      map[uint32]*portList
	heap       []*portList // max-heap by number of entries
	stats      LearningStats
}

// NewLearningSwitch returns an empty switch.
func NewLearningSwitch(opts LearningOptions) *LearningSwitch {
	s := &LearningSwitch{maxAge: opts.MaxAge, max: opts.MaxEntries, now: opts.Now, on: opts.OnEvent,
		free: none, head: none, tail: none, ports: make(map[uint32]*portList)}
	if s.maxAge <= 0 {
		s.maxAge = DefaultMaxAge
	}
	if s.max <= 0 {
		s.max = DefaultMaxEntries
	}
	if s.max > 1<<30 {
		s.max = 1 << 30 // entries are numbered with int32
	}
	if s.now == nil {
		s.now = time.Now
	}
	// Sized once, so that learning never grows them.
	s.index = make(map[macKey]int32, s.max)
	s.ents = make([]macEntry, 0, min(s.max, DefaultMaxEntries))
	return s
}

// Learn records that k's Ethernet source is on k's input port, in VLAN
// 0 (use LearnVLAN, or Env.Learn, for VLAN-aware learning). It returns the event when the table changed (a new
// address, or one that moved port: the caller must revalidate flows to
// that address) and reports it to OnEvent. Multicast and all-zero
// sources are not learned. It allocates nothing once the table has been
// full once.
func (s *LearningSwitch) Learn(k *flowkeys.Key) (Event, bool) {
	return s.LearnVLAN(0, k.EthSrc, k.InPort)
}

// LearnMAC is Learn for an explicit address and port, in VLAN 0.
func (s *LearningSwitch) LearnMAC(mac [6]byte, port uint32) (Event, bool) {
	return s.LearnVLAN(0, mac, port)
}

// LearnVLAN records that mac is on port in VLAN vlan (0-4095). When the
// table is full, a new address replaces one entry (see
// LearningOptions.MaxEntries), reported to OnEvent as Expired or Evicted
// before the Learned event.
func (s *LearningSwitch) LearnVLAN(vlan uint16, mac [6]byte, port uint32) (Event, bool) {
	if mac[0]&1 != 0 || mac == [6]byte{} {
		return Event{}, false
	}
	mk := macKey{mac: mac, vlan: vlan & 0xfff}
	var gone, ev Event
	s.mu.Lock()
	// The clock is read under the lock so that the lists stay ordered.
	now := s.now()
	i, ok := s.index[mk]
	switch {
	case ok && s.ents[i].port == port:
		s.ents[i].seen = now
		s.touch(i)
		s.mu.Unlock()
		return Event{}, false
	case ok:
		e := &s.ents[i]
		if now.Sub(e.seen) < s.maxAge {
			ev = Event{Kind: Moved, MAC: mac, VLAN: mk.vlan, Port: port, OldPort: e.port}
			s.stats.Moved++
		} else {
			// A stale entry is as good as gone: the flows to it were
			// revalidated, or will be, by its expiry.
			ev = Event{Kind: Learned, MAC: mac, VLAN: mk.vlan, Port: port}
			s.stats.Learned++
		}
		s.portUnlink(i)
		e.port, e.seen = port, now
		s.portPush(i)
		s.touch(i)
	default:
		if len(s.index) >= s.max {
			gone = s.evictLocked(now)
		}
		i = s.alloc()
		s.ents[i] = macEntry{mac: mk, port: port, seen: now, prev: none, next: none, pprev: none, pnext: none}
		s.push(i)
		s.portPush(i)
		s.index[mk] = i
		ev = Event{Kind: Learned, MAC: mac, VLAN: mk.vlan, Port: port}
		s.stats.Learned++
	}
	s.mu.Unlock()
	if s.on != nil {
		if gone.Kind != 0 {
			s.on(gone)
		}
		s.on(ev)
	}
	return ev, true
}

// evictLocked removes one entry to make room: the oldest if it has aged
// out, otherwise the least recently seen of the port with the most
// entries.
func (s *LearningSwitch) evictLocked(now time.Time) Event {
	if s.tail != none && now.Sub(s.ents[s.tail].seen) >= s.maxAge {
		e := s.ents[s.tail]
		s.removeLocked(s.tail)
		s.stats.Expired++
		return Event{Kind: Expired, MAC: e.mac.mac, VLAN: e.mac.vlan, OldPort: e.port}
	}
	if len(s.heap) == 0 || s.heap[0].tail == none {
		return Event{}
	}
	i := s.heap[0].tail
	e := s.ents[i]
	s.removeLocked(i)
	s.stats.Evicted++
	return Event{Kind: Evicted, MAC: e.mac.mac, VLAN: e.mac.vlan, OldPort: e.port}
}

// Lookup returns the port mac was learned on in VLAN 0, if it is known
// and has not aged out.
func (s *LearningSwitch) Lookup(mac [6]byte) (uint32, bool) {
	return s.LookupVLAN(0, mac)
}

// LookupVLAN returns the port mac was learned on in VLAN vlan, if it is
// known and has not aged out.
func (s *LearningSwitch) LookupVLAN(vlan uint16, mac [6]byte) (uint32, bool) {
	now := s.now()
	s.mu.RLock()
	i, ok := s.index[macKey{mac: mac, vlan: vlan & 0xfff}]
	var e macEntry
	if ok {
		e = s.ents[i]
	}
	s.mu.RUnlock()
	if !ok || now.Sub(e.seen) >= s.maxAge {
		return 0, false
	}
	return e.port, true
}

// Expire removes the entries that have aged out and returns an Expired
// event for each (also reported to OnEvent). Call it periodically. Its
// work is proportional to the number of entries it removes.
func (s *LearningSwitch) Expire() []Event {
	var evs []Event
	s.mu.Lock()
	now := s.now()
	for s.tail != none && now.Sub(s.ents[s.tail].seen) >= s.maxAge {
		e := s.ents[s.tail]
		s.removeLocked(s.tail)
		s.stats.Expired++
		evs = append(evs, Event{Kind: Expired, MAC: e.mac.mac, VLAN: e.mac.vlan, OldPort: e.port})
	}
	s.mu.Unlock()
	s.report(evs)
	return evs
}

// ForgetPort removes every entry on port (the port was deleted) and
// returns an Expired event for each.
func (s *LearningSwitch) ForgetPort(port uint32) []Event {
	var evs []Event
	s.mu.Lock()
	if pl := s.ports[port]; pl != nil {
		for pl.head != none {
			e := s.ents[pl.head]
			s.removeLocked(pl.head)
			s.stats.Expired++
			evs = append(evs, Event{Kind: Expired, MAC: e.mac.mac, VLAN: e.mac.vlan, OldPort: port})
		}
		s.heapRemove(pl.heap)
		delete(s.ports, port)
	}
	s.mu.Unlock()
	s.report(evs)
	return evs
}

func (s *LearningSwitch) report(evs []Event) {
	if s.on == nil {
		return
	}
	for _, ev := range evs {
		s.on(ev)
	}
}

// Stats returns the counters.
func (s *LearningSwitch) Stats() LearningStats {
	s.mu.RLock()
	st := s.stats
	st.Entries = len(s.index)
	s.mu.RUnlock()
	return st
}

// alloc returns a free entry slot.
func (s *LearningSwitch) alloc() int32 {
	if s.free != none {
		i := s.free
		s.free = s.ents[i].next
		return i
	}
	s.ents = append(s.ents, macEntry{})
	return int32(len(s.ents) - 1)
}

// removeLocked unlinks entry i from every list and the index and frees
// its slot.
func (s *LearningSwitch) removeLocked(i int32) {
	s.unlink(i)
	s.portUnlink(i)
	delete(s.index, s.ents[i].mac)
	s.ents[i] = macEntry{next: s.free, prev: none, pprev: none, pnext: none}
	s.free = i
}

// push puts entry i at the head of the table's list.
func (s *LearningSwitch) push(i int32) {
	e := &s.ents[i]
	e.prev, e.next = none, s.head
	if s.head != none {
		s.ents[s.head].prev = i
	} else {
		s.tail = i
	}
	s.head = i
}

// unlink takes entry i off the table's list.
func (s *LearningSwitch) unlink(i int32) {
	e := &s.ents[i]
	if e.prev != none {
		s.ents[e.prev].next = e.next
	} else {
		s.head = e.next
	}
	if e.next != none {
		s.ents[e.next].prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = none, none
}

// touch moves entry i to the head of both its lists.
func (s *LearningSwitch) touch(i int32) {
	if s.head != i {
		s.unlink(i)
		s.push(i)
	}
	pl := s.ports[s.ents[i].port]
	if pl.head != i {
		s.portUnlink(i)
		s.portPush(i)
	}
}

// portPush puts entry i at the head of its port's list, creating the
// list for a new port.
func (s *LearningSwitch) portPush(i int32) {
	e := &s.ents[i]
	pl := s.ports[e.port]
	if pl == nil {
		pl = &portList{port: e.port, head: none, tail: none, heap: len(s.heap)}
		s.ports[e.port] = pl
		s.heap = append(s.heap, pl)
	}
	e.pprev, e.pnext = none, pl.head
	if pl.head != none {
		s.ents[pl.head].pprev = i
	} else {
		pl.tail = i
	}
	pl.head = i
	pl.n++
	s.heapUp(pl.heap)
}

// portUnlink takes entry i off its port's list.
func (s *LearningSwitch) portUnlink(i int32) {
	e := &s.ents[i]
	pl := s.ports[e.port]
	if e.pprev != none {
		s.ents[e.pprev].pnext = e.pnext
	} else {
		pl.head = e.pnext
	}
	if e.pnext != none {
		s.ents[e.pnext].pprev = e.pprev
	} else {
		pl.tail = e.pprev
	}
	e.pprev, e.pnext = none, none
	pl.n--
	s.heapDown(pl.heap)
}

// The heap of ports: heap[0] has the most entries.

func (s *LearningSwitch) heapSwap(a, b int) {
	s.heap[a], s.heap[b] = s.heap[b], s.heap[a]
	s.heap[a].heap, s.heap[b].heap = a, b
}

func (s *LearningSwitch) heapUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.heap[p].n >= s.heap[i].n {
			return
		}
		s.heapSwap(p, i)
		i = p
	}
}

func (s *LearningSwitch) heapDown(i int) {
	for {
		l, big := 2*i+1, i
		if l < len(s.heap) && s.heap[l].n > s.heap[big].n {
			big = l
		}
		if r := l + 1; r < len(s.heap) && s.heap[r].n > s.heap[big].n {
			big = r
		}
		if big == i {
			return
		}
		s.heapSwap(i, big)
		i = big
	}
}

func (s *LearningSwitch) heapRemove(i int) {
	last := len(s.heap) - 1
	if i != last {
		s.heapSwap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	if i < len(s.heap) {
		s.heapDown(i)
		s.heapUp(i)
	}
}

// Decide is the learning switch's decision alone: a "normal" action (the
// same as DefaultRules().Decide).
func (s *LearningSwitch) Decide(k *flowkeys.Key) Decision {
	return defaultRules.Decide(k)
}

var defaultRules = DefaultRules()
