package daemon

import (
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
)

// mplsFrame is an Ethernet frame of type 0x8847 with the label stack
// entries lses and nothing after them.
func mplsFrame(src, dst mac, lses ...uint32) []byte {
	b := make([]byte, 14+4*len(lses))
	copy(b[0:], dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], 0x8847)
	for i, l := range lses {
		binary.BigEndian.PutUint32(b[14+4*i:], l)
	}
	return b
}

// A frame whose MPLS label stack ends before a bottom-of-stack entry has
// a key without labels (the kernel's num_labels_mask of 0, a 0-byte mpls
// attribute in the upcall). The daemon must still install a megaflow for
// it, one that matches the frame, so that the next such frame is no
// upcall: before, the megaflow's key carried the 0-byte mpls attribute,
// every put failed with EINVAL and every frame was a miss.
func TestMPLSWithoutBottomOfStackGetsAFlow(t *testing.T) {
	// The learning switch alone wildcards the Ethernet type; a rule on
	// dl_type makes the flow match it exactly (and so need an mpls key
	// attribute).
	pols := []struct {
		name, rules, want string
	}{
		{"normal", "", "recirc_id(0),in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02) actions:2"},
		{"dl_type", "priority=100,ip,actions=drop\npriority=0,actions=normal\n",
			"recirc_id(0),in_port(1),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x8847) actions:2"},
	}
	for _, c := range []struct {
		name string
		lses []uint32
	}{
		{"no-label", nil},
		{"one-label", []uint32{100<<12 | 64}},
		{"three-labels", []uint32{1<<12 | 9, 2<<12 | 9, 3<<12 | 9}},
		{"four-labels", []uint32{1<<12 | 9, 2<<12 | 9, 3<<12 | 9, 4<<12 | 9}},
	} {
		for _, pol := range pols {
			t.Run(c.name+"/"+pol.name, func(t *testing.T) {
				cfg := Config{}
				if pol.rules != "" {
					cfg.Rules = mustRules(t, pol.rules)
				}
				h := newHarness(t, 2, cfg)
				h.start()
				f := mplsFrame(macN(1), macN(2), c.lses...)
				// Teach the switch where 2 is, so that the flow outputs to 2.
				h.send(2, mplsFrame(macN(2), macN(9), 1<<12|0x100|1))
				h.expect(1, mplsFrame(macN(2), macN(9), 1<<12|0x100|1))
				h.waitFlows(1)
				h.send(1, f)
				h.expect(2, f)
				fs := h.waitFlows(2)
				if fs[0] != pol.want {
					t.Errorf("flow %q, want %q", fs[0], pol.want)
				}
				if st := h.waitAccounted(2); st.Failed != 0 || st.Handled != 2 {
					t.Fatalf("after the first frame: %+v, want 2 handled, 0 failed", st)
				}
				// The second frame hits the flow: no upcall.
				h.send(1, f)
				h.expect(2, f)
				time.Sleep(20 * time.Millisecond)
				if st := h.d.Status(); st.Handled != 2 || st.Failed != 0 {
					t.Errorf("after the second frame: %+v, want still 2 handled (a flow hit)", st)
				}
			})
		}
	}
}

// A restarted daemon adopts the megaflows of MPLS frames without a
// bottom-of-stack entry: the datapath dumps their masked key with a
// 0-byte mpls attribute (the kernel's __ovs_nla_put_key of the masked
// key, whose label count the mask left out), which the kernel's flow
// rules refuse; such a flow must not be deleted as unusable. The same
// for the other megaflows odp.MegaflowFromFlowKeys shapes (cut VLAN
// tags, NSH under the learning switch), and for any tagged frame under
// the learning switch, whose masked key has eth_type(0) inside the
// encap (before, only a top-level eth_type(0) was converted, and such
// flows were deleted as unusable at every restart).
func TestRestartAdoptsUnusualMegaflows(t *testing.T) {
	cases := []struct {
		name, rules string
		frame       []byte
	}{
		{"mpls-no-bos", "priority=100,ip,actions=drop\npriority=0,actions=output:2\n", mplsFrame(macN(1), macN(2), 7<<12|64)},
		{"nsh", "", corpusFrame(t, "nsh/md1")},
		// Any tagged frame under the learning switch: the masked key
		// has eth_type(0) inside the encap.
		{"vlan-ipv4", "", corpusFrame(t, "vlan/ipv4/udp")},
	}
	for name, f := range cutTagFrames() {
		cases = append(cases, struct {
			name, rules string
			frame       []byte
		}{name, "", f})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := func() Config {
				if c.rules == "" {
					return Config{}
				}
				return Config{Rules: mustRules(t, c.rules)}
			}
			h := newHarness(t, 2, cfg())
			h.start()
			h.send(1, c.frame)
			h.expect(2, c.frame)
			h.waitFlows(1)
			h.revalidate()
			before := h.flows()
			h.stop()

			c2 := cfg()
			c2.Datapath, c2.Handlers, c2.RevalidateInterval, c2.Logger = h.dp, 1, time.Hour, discardLogger()
			d2, err := New(c2)
			if err != nil {
				t.Fatal(err)
			}
			h.d = d2
			h.start()
			r := h.revalidate()
			if r.Deleted != 0 || d2.Status().Flows != 1 {
				t.Errorf("after restart: %+v with %d flows, want the flow adopted, nothing deleted", r, d2.Status().Flows)
			}
			checkFlows(t, h.flows(), before...)
		})
	}
}

// cutTagFrames are frames whose VLAN tag is cut short: the outer one
// (a TPID and one byte), and the inner one after a whole outer tag (a
// TPID and the TCI, no type). The kernel's key takes the TPID as the
// Ethernet type and leaves the tag's TCI zero; its upcall key is
// eth_type(0),vlan(0),encap() at that level, which no flow can have.
func cutTagFrames() map[string][]byte {
	outer := append(mplsFrame(macN(1), macN(2))[:12:12], 0x81, 0x00, 0x20)
	inner := append(mplsFrame(macN(1), macN(2))[:12:12], 0x81, 0x00, 0x00, 0x64, 0x88, 0xa8, 0x00, 0x05)
	return map[string][]byte{"vlan-outer-cut": outer, "vlan-inner-cut": inner}
}

// Frames whose upcall key is no valid flow key, under the learning
// switch (which does not read the Ethernet type), get a flow that
// matches them. Before, every such frame was a miss and a failed put:
// an NSH frame's megaflow mask had an all-zero nsh nest, which the
// kernel takes as a mask on NSH fields without an exact Ethernet type
// (EINVAL); a frame whose VLAN tag is cut short had the upcall's
// eth_type(0) with a vlan attribute (EINVAL).
func TestLearningSwitchUnusualFramesGetAFlow(t *testing.T) {
	frames := cutTagFrames()
	frames["nsh/md1"] = corpusFrame(t, "nsh/md1")
	frames["nsh/md2"] = corpusFrame(t, "nsh/md2")
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, 2, Config{})
			h.start()
			h.send(1, f)
			h.expect(2, f)
			h.waitFlows(1)
			if st := h.waitAccounted(1); st.Failed != 0 || st.Handled != 1 {
				t.Fatalf("%+v, want 1 handled, 0 failed", st)
			}
			h.send(1, f)
			h.expect(2, f)
			time.Sleep(20 * time.Millisecond)
			if st := h.d.Status(); st.Handled != 1 {
				t.Errorf("after the second frame: %+v, want still 1 handled (a flow hit)", st)
			}
		})
	}
}

// A decision that read the Ethernet type of a frame whose VLAN tag is
// cut short cannot be a flow (the type is the tag's TPID, which no flow
// matches): the miss installs nothing, is counted as refused
// (inexpressible) with a warning, and the packet is still forwarded.
func TestCutTagWithEthTypeDecisionRefused(t *testing.T) {
	for name, f := range cutTagFrames() {
		t.Run(name, func(t *testing.T) {
			logs := &logCapture{}
			h := newHarness(t, 2, Config{Rules: mustRules(t, "priority=100,ip,actions=drop\npriority=0,actions=output:2\n"), Logger: slog.New(logs)})
			h.start()
			h.send(1, f)
			h.expect(2, f)
			h.waitAccounted(1)
			if got := h.counter("upcalld_megaflows_refused_total", "reason=inexpressible"); got != 1 {
				t.Errorf("refused (inexpressible): %v, want 1", got)
			}
			if fs := h.flows(); len(fs) != 0 {
				t.Errorf("flows %q, want none", fs)
			}
			// The warning follows the accounting.
			recs := logs.wait(1, 5*time.Second)
			if len(recs) != 1 || !strings.Contains(recs[0], "cut short") {
				t.Errorf("warnings %q, want one saying the tag is cut short", recs)
			}
		})
	}
}

// waitAccounted waits (5 s at most) until the daemon has accounted for
// n upcalls (handled or failed: the accounting follows the flow's put
// and the packet's output) and returns its status.
func (h *harness) waitAccounted(n uint64) Status {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := h.d.Status()
		if st.Handled+st.Failed >= n || time.Now().After(deadline) {
			return st
		}
		time.Sleep(time.Millisecond)
	}
}

func corpusFrame(t *testing.T, name string) []byte {
	t.Helper()
	return flowkeystest.CorpusPacket(t, name)
}
