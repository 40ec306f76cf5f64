package policy

import (
	"sync"

	"github.com/ovsdp/ovsdp/odp"
)

// Recirculator hands out the recirculation IDs of ct(...,table=N): the
// datapath action is ct(...),recirc(ID), and the packet comes back as a
// miss with recirc_id ID, to be decided from table N (DecideAt).
type Recirculator interface {
	// RecircID returns the ID for the ct action whose canonical text is
	// ct, going on in table: the same ID for the same pair while it is
	// in use.
	RecircID(ct string, table int) uint32
}

// RecircTable is the daemon's Recirculator: IDs allocated per (ct
// action, continuation table), reused while any flow refers to them,
// counted by Ref and Unref (the flows installed with recirc(ID) in their
// actions), and freed by Sweep once no flow has referred to them for a
// whole sweep interval (so that a packet executed just before its flow
// was refused still finds its ID when it comes back). IDs are never 0
// and are not reused after they are freed, until the 32-bit space wraps.
// It is safe for concurrent use.
type RecircTable struct {
	mu    sync.Mutex
	byKey map[recircKey]*recircEntry
	byID  map[uint32]*recircEntry
	next  uint32
	epoch uint64
}

type recircKey struct {
	ct    string
	table int
}

type recircEntry struct {
	id   uint32
	key  recircKey
	refs int
	// used is the epoch the ID was last handed out in.
	used uint64
}

// NewRecircTable returns an empty table; its first ID is 1.
func NewRecircTable() *RecircTable {
	return &RecircTable{byKey: map[recircKey]*recircEntry{}, byID: map[uint32]*recircEntry{}, next: 1}
}

// RecircID implements Recirculator.
func (t *RecircTable) RecircID(ct string, table int) uint32 {
	k := recircKey{ct, table}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byKey[k]
	if e == nil {
		for t.next == 0 || t.byID[t.next] != nil {
			t.next++
		}
		e = &recircEntry{id: t.next, key: k}
		t.next++
		t.byKey[k], t.byID[e.id] = e, e
	}
	e.used = t.epoch
	return e.id
}

// Table returns the continuation table of a live ID.
func (t *RecircTable) Table(id uint32) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byID[id]; e != nil {
		return e.key.table, true
	}
	return 0, false
}

// Ref counts one more flow referring to each live ID that acts
// recirculate to (IDs it does not know are ignored).
func (t *RecircTable) Ref(acts odp.Actions) { t.add(acts, 1) }

// Unref undoes a Ref of the same actions.
func (t *RecircTable) Unref(acts odp.Actions) { t.add(acts, -1) }

func (t *RecircTable) add(acts odp.Actions, n int) {
	if !hasRecirc(acts) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range acts {
		if r, ok := a.(odp.Recirc); ok {
			if e := t.byID[r.ID]; e != nil {
				e.refs += n
				if e.refs <= 0 {
					e.refs = 0
					e.used = t.epoch // the grace period starts now
				}
			}
		}
	}
}

func hasRecirc(acts odp.Actions) bool {
	for _, a := range acts {
		if _, ok := a.(odp.Recirc); ok {
			return true
		}
	}
	return false
}

// Refs returns the number of flows referring to id (0 for an ID not
// live).
func (t *RecircTable) Refs(id uint32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.byID[id]; e != nil {
		return e.refs
	}
	return 0
}

// Sweep frees the IDs that no flow refers to and that were not handed
// out or released since the previous Sweep, and returns them; then it
// starts a new interval.
func (t *RecircTable) Sweep() []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var freed []uint32
	for id, e := range t.byID {
		if e.refs == 0 && e.used < t.epoch {
			delete(t.byID, id)
			delete(t.byKey, e.key)
			freed = append(freed, id)
		}
	}
	t.epoch++
	return freed
}

// Reserve makes later IDs larger than id (the IDs of flows a restarted
// daemon found in the datapath, which it must not hand out again).
func (t *RecircTable) Reserve(id uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id >= t.next {
		t.next = id + 1
	}
}

// Len returns the number of live IDs.
func (t *RecircTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
