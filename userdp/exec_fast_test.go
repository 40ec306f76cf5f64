package userdp

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/internal/header"
	"github.com/ovsdp/ovsdp/odp"
)

func TestCompileFast(t *testing.T) {
	key := flowkeys.Key{EthType: header.EtherTypeIPv4}
	for _, c := range []struct {
		acts string
		want fastProg
	}{
		{"2", fastProg{kind: fastOutput, port: 2}},
		{"dec_ttl(le_1(drop)),7", fastProg{kind: fastDecTTLOutput, port: 7}},
		{"dec_ttl(le_1(3)),7", fastProg{kind: fastDecTTLOutput, port: 7}},
		{"2,3", fastProg{}},
		{"dec_ttl(le_1(drop))", fastProg{}},
		{"dec_ttl(le_1(drop)),2,3", fastProg{}},
		{"trunc(100),2", fastProg{}},
		{"drop", fastProg{}},
		{"clone(2)", fastProg{}},
	} {
		as, err := odp.ParseActions(c.acts)
		if err != nil {
			t.Fatalf("%s: %v", c.acts, err)
		}
		prog, err := compileActions(as, &key)
		if err != nil {
			t.Fatalf("%s: %v", c.acts, err)
		}
		if got := newFlowActions(as, prog).fast; got != c.want {
			t.Errorf("%s: fast form %+v, want %+v", c.acts, got, c.want)
		}
	}
}

// fastOutcome is what executing a packet's actions left behind: the
// packet's state and frame, the worker's counters, and the frames queued
// on the output port (and whether each is the packet's own buffer).
type fastOutcome struct {
	ctx      pktCtx
	frame    []byte
	counters workerCounters
	queued   [][]byte
	stolen   []bool
}

// fastState is the part of a packet's state that output and dec_ttl
// read or change, besides its key and frame.
type fastState struct {
	keyValid, hValid, steal, noEth bool
	l3off, off, n                  int
	cutlen                         uint32
	proto                          uint16
}

func fastStateOf(c *pktCtx) fastState {
	return fastState{c.keyValid, c.hValid, c.steal, c.noEth, c.l3off, c.f.Off, c.f.Len, c.cutlen, c.proto}
}

// TestRunFastMatchesRun runs packets in every combination of the states
// runFast distinguishes through the fast form of their flow's actions
// (falling back to run when it declines, as lookupAndRun does) and
// through run alone, and requires the same outcome. A declined fast form
// must have changed nothing, and the common state must take it.
func TestRunFastMatchesRun(t *testing.T) {
	w, _, base := pipelineFixture(t, DefaultCacheEntries)
	const hugePort = maxPortNumber + 1
	filler := bytes.Repeat([]byte{0xee}, 60)
	// collect records what the worker queued on port and empties its
	// queues and counters.
	collect := func(c *pktCtx, port uint32) fastOutcome {
		o := fastOutcome{ctx: *c, frame: clone(c.f.Bytes()), counters: w.counters}
		if int(port) < len(w.txq) {
			q := &w.txq[port]
			for _, p := range q.pkts[:q.n] {
				o.queued = append(o.queued, clone(p))
				o.stolen = append(o.stolen, len(p) > 0 && unsafe.SliceData(p) == &c.f.Buf[c.f.Off])
			}
		}
		for _, p := range w.dirty {
			q := &w.txq[p]
			clear(q.pkts[:q.n])
			q.n = 0
		}
		w.dirty = w.dirty[:0]
		w.counters = workerCounters{}
		return o
	}
	var cases, taken int
	for _, ttl := range []byte{0, 1, 2, 64, 255} {
		for _, proto := range []uint16{header.EtherTypeIPv4, header.EtherTypeIPv6, header.EtherTypeVLAN} {
			for _, cut := range []int{0, 60 - 14 - 20, 60 - 14 - 19} { // whole; the IPv4 header just fits; one byte short
				for _, kind := range []fastKind{fastOutput, fastDecTTLOutput} {
					for _, port := range []uint32{2, 3, hugePort} {
						for flags := 0; flags < 1<<7; flags++ {
							cases++
							name := fmt.Sprintf("ttl=%d proto=%#x cut=%d kind=%d port=%d flags=%07b", ttl, proto, cut, kind, port, flags)
							frame := clone(base)
							frame[14+8] = ttl
							fixIPv4(frame, 14)
							frame = frame[:len(frame)-cut]
							acts := odp.Actions{odp.Output{Port: port}}
							if kind == fastDecTTLOutput {
								acts = odp.Actions{odp.DecTTL{LE1: odp.Actions{odp.Output{Port: 2}}}, odp.Output{Port: port}}
							}
							var key flowkeys.Key
							md := flowkeys.Metadata{InPort: 1}
							if err := flowkeys.Extract(frame, &md, &key); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							prog, err := compileActions(acts, &key)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							fa := newFlowActions(acts, prog)
							if fa.fast.kind != kind {
								t.Fatalf("%s: fast form %+v", name, fa.fast)
							}
							c0 := pktCtx{key: key, keyValid: true, l3off: 14, proto: proto, steal: true, acts: fa}
							if flags&1 != 0 {
								c0.noEth = true
							}
							if flags&2 != 0 {
								c0.cutlen = 4
							}
							if flags&4 != 0 {
								c0.steal = false
							}
							if flags&8 != 0 {
								c0.keyValid = false
							}
							if flags&16 != 0 {
								c0.key.IPTTL = 0
							}
							if flags&32 != 0 {
								c0.l3off = 0 // not known: run parses
							}
							tunnels := flags&64 != 0
							if tunnels {
								w.dp.tunnels.Add(1)
							}
							runOne := func(fast bool, prefill bool) (fastOutcome, bool) {
								buf := make([]byte, BufferSize(1500))
								copy(buf[DefaultHeadroom:], frame)
								c := c0
								c.f = frameBuf{Buf: buf, Off: DefaultHeadroom, Len: len(frame)}
								if prefill && port != hugePort {
									w.output(port, filler, false)
								}
								took := false
								if fast {
									before, beforeKey := clone(c.f.Bytes()), c.key
									took = w.runFast(&c, fa.fast, c.f.Bytes())
									if !took && (!bytes.Equal(before, c.f.Bytes()) || c.key != beforeKey || w.counters != (workerCounters{})) {
										t.Errorf("%s: runFast declined after changing the packet or the counters", name)
									}
								}
								if !took {
									w.run(&c, fa.prog)
								}
								return collect(&c, port), took
							}
							for _, prefill := range []bool{false, true} {
								want, _ := runOne(false, prefill)
								got, took := runOne(true, prefill)
								if took {
									taken++
								}
								common := flags == 0 && cut != 60-14-19 && ttl > 1 && proto == header.EtherTypeIPv4
								if tunnels && took {
									// The fixture has no tunnel port, so run's result
									// is the same; but with one, output encapsulates.
									t.Errorf("%s prefill=%v: the fast form was taken with a tunnel port in the datapath", name, prefill)
								}
								if common && !took {
									t.Errorf("%s prefill=%v: the fast form was not taken", name, prefill)
								}
								if !bytes.Equal(got.frame, want.frame) {
									t.Errorf("%s prefill=%v: frame\n got %x\nwant %x", name, prefill, got.frame, want.frame)
								}
								if got.ctx.key != want.ctx.key {
									t.Errorf("%s prefill=%v: key TTL %d, want %d", name, prefill, got.ctx.key.IPTTL, want.ctx.key.IPTTL)
								}
								if g, w := fastStateOf(&got.ctx), fastStateOf(&want.ctx); g != w {
									t.Errorf("%s prefill=%v: packet state %+v, want %+v", name, prefill, g, w)
								}
								if got.counters != want.counters {
									t.Errorf("%s prefill=%v: counters %+v, want %+v", name, prefill, got.counters, want.counters)
								}
								if len(got.queued) != len(want.queued) {
									t.Errorf("%s prefill=%v: %d frames queued, want %d", name, prefill, len(got.queued), len(want.queued))
									continue
								}
								for i := range got.queued {
									if !bytes.Equal(got.queued[i], want.queued[i]) || got.stolen[i] != want.stolen[i] {
										t.Errorf("%s prefill=%v: queued frame %d: %x (own buffer %v), want %x (%v)", name, prefill, i,
											got.queued[i], got.stolen[i], want.queued[i], want.stolen[i])
									}
								}
							}
							if tunnels {
								w.dp.tunnels.Add(-1)
							}
						}
					}
				}
			}
		}
	}
	if taken == 0 {
		t.Fatalf("the fast form was never taken in %d cases", cases)
	}
	t.Logf("%d cases, the fast form taken %d times", cases*2, taken)
}
