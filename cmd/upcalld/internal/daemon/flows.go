package daemon

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
)

// record is what the daemon remembers about one datapath flow it owns:
// enough to re-decide it when the policy changes, and to expire it.
type record struct {
	ufid odp.UFID
	// id names the flow in the datapath (by UFID, or by key for an
	// adopted flow that has none).
	id odp.FlowID
	// key and mask are the flow's match as flowkeys.Key (key is the key
	// of the packet that created it, or the dumped key of an adopted
	// flow); keyAttrs and maskAttrs as installed.
	key, mask           flowkeys.Key
	keyAttrs, maskAttrs odp.FlowKey
	actions             odp.Actions
	actionsWire         []byte
	// normal: the decision used the learning switch; dst is then the
	// Ethernet destination whose MAC table changes affect it.
	normal bool
	// normalTCI is the decision's Decision.NormalTCI: what the traffic
	// keeps learned is the source in the VLAN that tag is in.
	normalTCI uint16
	// rulesGen is the policy generation the actions were decided with;
	// macSeq the MAC-table sequence number read before deciding.
	rulesGen uint64
	macSeq   uint64
	// installed is when the daemon installed or adopted the flow
	// (monotonic milliseconds); packets the last packet count seen in a
	// dump; lastUsed the latest use time seen (monotonic ms).
	installed uint64
	packets   uint64
	lastUsed  uint64
	// seenPass is the last revalidation pass whose dump saw the flow.
	seenPass uint64
	adopted  bool
}

const numShards = 16

// flowTable is the daemon's per-UFID flow records, sharded so that
// handlers and the revalidator rarely contend.
type flowTable struct {
	shards [numShards]struct {
		mu sync.Mutex
		m  map[odp.UFID]*record
	}
	n atomic.Int64
	// recirc counts the flows whose actions recirculate to each ID.
	recirc *policy.RecircTable
}

func newFlowTable(recirc *policy.RecircTable) *flowTable {
	t := &flowTable{recirc: recirc}
	for i := range t.shards {
		t.shards[i].m = make(map[odp.UFID]*record)
	}
	return t
}

func shardOf(u odp.UFID) int { return int(u[0]) % numShards }

// get returns the record of u, or nil.
func (t *flowTable) get(u odp.UFID) *record {
	s := &t.shards[shardOf(u)]
	s.mu.Lock()
	r := s.m[u]
	s.mu.Unlock()
	return r
}

// add inserts r unless a record with its UFID exists; it reports whether
// it inserted.
func (t *flowTable) add(r *record) bool {
	s := &t.shards[shardOf(r.ufid)]
	s.mu.Lock()
	_, ok := s.m[r.ufid]
	if !ok {
		s.m[r.ufid] = r
	}
	s.mu.Unlock()
	if !ok {
		t.n.Add(1)
		t.recirc.Ref(r.actions)
	}
	return !ok
}

// setActions replaces the actions of r, a record in the table, keeping
// the recirculation counts.
func (t *flowTable) setActions(r *record, acts odp.Actions, wire []byte) {
	t.recirc.Ref(acts)
	t.recirc.Unref(r.actions)
	r.actions, r.actionsWire = acts, wire
}

// remove deletes the record of u, if r is still the one stored.
func (t *flowTable) remove(u odp.UFID, r *record) {
	s := &t.shards[shardOf(u)]
	s.mu.Lock()
	cur, ok := s.m[u]
	if ok && (r == nil || cur == r) {
		delete(s.m, u)
	}
	s.mu.Unlock()
	if ok && (r == nil || cur == r) {
		t.n.Add(-1)
		t.recirc.Unref(cur.actions)
	}
}

// len is the number of records.
func (t *flowTable) len() int { return int(t.n.Load()) }

// each calls fn for every record, shard by shard, with the shard locked:
// fn must not call back into the table.
func (t *flowTable) each(fn func(*record)) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, r := range s.m {
			fn(r)
		}
		s.mu.Unlock()
	}
}

// ufidOf returns the UFID of the megaflow (key & mask, mask): a 128-bit
// hash of the masked key's and the mask's words, stable across restarts
// (so that a restarted daemon computes the same UFIDs), never zero.
// Packets of the same megaflow get the same UFID. It allocates nothing.
func ufidOf(key, mask *flowkeys.Key) odp.UFID {
	kw, mw := key.Words(), mask.Words()
	// Two independent 64-bit multiply-xorshift chains.
	h1 := uint64(0x9e3779b97f4a7c15)
	h2 := uint64(0xc2b2ae3d27d4eb4f)
	for i := range kw {
		m := mw[i]
		v := kw[i] & m
		h1 = flowkeys.Mix64(h1 ^ v ^ uint64(i)<<56)
		h1 = flowkeys.Mix64(h1 ^ m)
		h2 = flowkeys.Mix64(h2 + v*0xff51afd7ed558ccd)
		h2 = flowkeys.Mix64(h2 + m*0xc4ceb9fe1a85ec53 + uint64(i))
	}
	var u odp.UFID
	binary.LittleEndian.PutUint64(u[0:], h1)
	binary.LittleEndian.PutUint64(u[8:], h2)
	if u.IsZero() {
		u[0] = 1
	}
	return u
}

// maskSubset reports whether every bit of a is set in b.
func maskSubset(a, b *flowkeys.Key) bool {
	aw, bw := a.Words(), b.Words()
	for i := range aw {
		if aw[i]&^bw[i] != 0 {
			return false
		}
	}
	return true
}
