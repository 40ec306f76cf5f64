package daemon

import (
	"encoding/binary"
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
				if st := h.d.Status(); st.Failed != 0 || st.Handled != 2 {
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

// A restarted daemon adopts the flows of MPLS frames without a
// bottom-of-stack entry: the datapath dumps their masked key with a
// 0-byte mpls attribute (the kernel's __ovs_nla_put_key of the masked
// key, whose label count the mask left out), which the kernel's flow
// rules refuse; such a flow must not be deleted as unusable.
func TestRestartAdoptsMPLSWithoutBottomOfStack(t *testing.T) {
	h := newHarness(t, 2, Config{Rules: mustRules(t, "priority=100,ip,actions=drop\npriority=0,actions=output:2\n")})
	h.start()
	f := mplsFrame(macN(1), macN(2), 7<<12|64)
	h.send(1, f)
	h.expect(2, f)
	h.waitFlows(1)
	h.revalidate()
	before := h.flows()
	h.stop()

	d2, err := New(Config{Datapath: h.dp, Rules: mustRules(t, "priority=100,ip,actions=drop\npriority=0,actions=output:2\n"),
		Handlers: 1, RevalidateInterval: time.Hour, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h.d = d2
	h.start()
	r := h.revalidate()
	if r.Deleted != 0 || r.Modified != 0 || d2.Status().Flows != 1 {
		t.Errorf("after restart: %+v with %d flows, want the flow adopted, nothing deleted", r, d2.Status().Flows)
	}
	checkFlows(t, h.flows(), before...)
}

// An NSH frame under the learning switch (which does not read the
// Ethernet type) gets a flow: the megaflow's mask leaves out the nsh
// attribute. Before, the mask carried an all-zero nsh nest, which the
// kernel takes as a mask on NSH fields without an exact Ethernet type
// (EINVAL), and every NSH frame was a miss and a failed put.
func TestNSHUnderLearningSwitchGetsAFlow(t *testing.T) {
	for _, name := range []string{"nsh/md1", "nsh/md2"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, 2, Config{})
			h.start()
			f := corpusFrame(t, name)
			h.send(1, f)
			h.waitFlows(1)
			if st := h.d.Status(); st.Failed != 0 || st.Handled != 1 {
				t.Fatalf("%+v, want 1 handled, 0 failed", st)
			}
			h.send(1, f)
			time.Sleep(20 * time.Millisecond)
			if st := h.d.Status(); st.Handled != 1 {
				t.Errorf("after the second frame: %+v, want still 1 handled (a flow hit)", st)
			}
		})
	}
}

func corpusFrame(t *testing.T, name string) []byte {
	t.Helper()
	for _, p := range flowkeystest.Corpus() {
		if p.Name == name {
			return p.Data
		}
	}
	t.Fatalf("no corpus packet %q", name)
	return nil
}
