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
	// is full, expired entries are dropped; if none are, a new address
	// is not learned (and counted in Stats.Full) until room is made.
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
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case Learned:
		return "learned"
	case Moved:
		return "moved"
	case Expired:
		return "expired"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is a change of the MAC table. Every flow whose decision used
// "normal" (Decision.Normal) with this Ethernet destination must be
// revalidated: its output port changed (or it flooded and need not any
// more, or the other way round).
type Event struct {
	Kind    EventKind
	MAC     [6]byte
	Port    uint32 // new port (Learned, Moved)
	OldPort uint32 // previous port (Moved, Expired)
}

// String describes the event.
func (e Event) String() string {
	switch e.Kind {
	case Learned:
		return fmt.Sprintf("%s learned on port %d", fmtMAC(e.MAC), e.Port)
	case Moved:
		return fmt.Sprintf("%s moved from port %d to port %d", fmtMAC(e.MAC), e.OldPort, e.Port)
	}
	return fmt.Sprintf("%s expired from port %d", fmtMAC(e.MAC), e.OldPort)
}

// LearningStats are the switch's counters.
type LearningStats struct {
	Entries                 int
	Learned, Moved, Expired uint64
	// Full counts addresses not learned because the table was full.
	Full uint64
}

type macEntry struct {
	port uint32
	seen time.Time
}

// LearningSwitch is an L2 learning switch: it learns which port each
// Ethernet source address is on, forwards to the known port, and floods
// broadcast, multicast and unknown destinations. It is safe for
// concurrent use.
//
// The switch keys its table by MAC address alone (not by VLAN).
type LearningSwitch struct {
	maxAge time.Duration
	max    int
	now    func() time.Time
	on     func(Event)

	mu    sync.RWMutex
	table map[[6]byte]macEntry
	stats LearningStats
}

// NewLearningSwitch returns an empty switch.
func NewLearningSwitch(opts LearningOptions) *LearningSwitch {
	s := &LearningSwitch{maxAge: opts.MaxAge, max: opts.MaxEntries, now: opts.Now, on: opts.OnEvent,
		table: make(map[[6]byte]macEntry)}
	if s.maxAge <= 0 {
		s.maxAge = DefaultMaxAge
	}
	if s.max <= 0 {
		s.max = DefaultMaxEntries
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Learn records that k's Ethernet source is on k's input port; call it
// on every upcall. It returns the event when the table changed (a new
// address, or one that moved port: the caller must revalidate flows to
// that address) and reports it to OnEvent. Multicast and all-zero
// sources are not learned. Refreshing a known address allocates nothing.
func (s *LearningSwitch) Learn(k *flowkeys.Key) (Event, bool) {
	return s.LearnMAC(k.EthSrc, k.InPort)
}

// LearnMAC is Learn for an explicit address and port.
func (s *LearningSwitch) LearnMAC(mac [6]byte, port uint32) (Event, bool) {
	if mac[0]&1 != 0 || mac == [6]byte{} {
		return Event{}, false
	}
	now := s.now()
	var expired []Event
	s.mu.Lock()
	e, ok := s.table[mac]
	var ev Event
	switch {
	case ok && e.port == port:
		s.table[mac] = macEntry{port: port, seen: now}
		s.mu.Unlock()
		return Event{}, false
	case ok && now.Sub(e.seen) < s.maxAge:
		ev = Event{Kind: Moved, MAC: mac, Port: port, OldPort: e.port}
		s.stats.Moved++
	default:
		// New, or stale (a stale entry is as good as gone: the flows to it
		// were revalidated, or will be, by its expiry).
		if !ok && len(s.table) >= s.max {
			expired = s.expireLocked(now, nil)
			if len(s.table) >= s.max {
				s.stats.Full++
				s.mu.Unlock()
				s.report(expired)
				return Event{}, false
			}
		}
		ev = Event{Kind: Learned, MAC: mac, Port: port}
		s.stats.Learned++
	}
	s.table[mac] = macEntry{port: port, seen: now}
	s.mu.Unlock()
	s.report(expired)
	if s.on != nil {
		s.on(ev)
	}
	return ev, true
}

// Lookup returns the port mac was learned on, if it is known and has not
// aged out.
func (s *LearningSwitch) Lookup(mac [6]byte) (uint32, bool) {
	now := s.now()
	s.mu.RLock()
	e, ok := s.table[mac]
	s.mu.RUnlock()
	if !ok || now.Sub(e.seen) >= s.maxAge {
		return 0, false
	}
	return e.port, true
}

// Expire removes the entries that have aged out and returns an Expired
// event for each (also reported to OnEvent). Call it periodically.
func (s *LearningSwitch) Expire() []Event {
	var evs []Event
	s.mu.Lock()
	evs = s.expireLocked(s.now(), evs)
	s.mu.Unlock()
	s.report(evs)
	return evs
}

// ForgetPort removes every entry on port (the port was deleted) and
// returns an Expired event for each.
func (s *LearningSwitch) ForgetPort(port uint32) []Event {
	var evs []Event
	s.mu.Lock()
	for mac, e := range s.table {
		if e.port == port {
			delete(s.table, mac)
			s.stats.Expired++
			evs = append(evs, Event{Kind: Expired, MAC: mac, OldPort: port})
		}
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

func (s *LearningSwitch) expireLocked(now time.Time, evs []Event) []Event {
	for mac, e := range s.table {
		if now.Sub(e.seen) >= s.maxAge {
			delete(s.table, mac)
			s.stats.Expired++
			evs = append(evs, Event{Kind: Expired, MAC: mac, OldPort: e.port})
		}
	}
	return evs
}

// Stats returns the counters.
func (s *LearningSwitch) Stats() LearningStats {
	s.mu.RLock()
	st := s.stats
	st.Entries = len(s.table)
	s.mu.RUnlock()
	return st
}

// Decide is the learning switch's decision alone: a "normal" action (the
// same as DefaultRules().Decide).
func (s *LearningSwitch) Decide(k *flowkeys.Key) Decision {
	return defaultRules.Decide(k)
}

var defaultRules = DefaultRules()
