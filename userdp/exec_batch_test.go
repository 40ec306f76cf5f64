package userdp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/odp"
)

// AppendExecute executes every packet of a batch longer than txBatch in
// order, each in its own buffer until the batch's frames leave (a
// shared buffer would send the last frame many times), and reports a bad
// packet's error in its slot without stopping the others.
func TestAppendExecuteBatch(t *testing.T) {
	h := newHarness(t, 2)
	const n = 2*txBatch + 7
	const bad = 70
	pkts := make([]*odp.Packet, n)
	for i := range pkts {
		f := udpFrame(1, 2, uint16(i))
		binary.BigEndian.PutUint32(f[len(f)-4:], uint32(i)) // the payload says which
		pkts[i] = &odp.Packet{Data: f, Key: odp.FlowKey{odp.InPort(1)}, Actions: odp.Actions{odp.Output{Port: 2}}}
	}
	pkts[bad].Data = pkts[bad].Data[:10] // shorter than an Ethernet header
	errs := h.dp.AppendExecute(context.Background(), make([]error, 0, 3), pkts)
	if len(errs) != n {
		t.Fatalf("%d results for %d packets", len(errs), n)
	}
	for i, err := range errs {
		if i == bad {
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("packet %d (10 bytes): %v, want EINVAL", i, err)
			}
		} else if err != nil {
			t.Errorf("packet %d: %v", i, err)
		}
	}
	for i := range n {
		if i == bad {
			continue
		}
		if f := h.expect(2); !bytes.Equal(f, pkts[i].Data) {
			t.Fatalf("frame %d out: payload %d, want %d (% x)", i, binary.BigEndian.Uint32(f[len(f)-4:]), i, f)
		}
	}
	h.expectNone(2)
}

// AppendExecute on a closed datapath fails every packet, as Execute.
func TestAppendExecuteClosed(t *testing.T) {
	h := newHarness(t, 2)
	p := &odp.Packet{Data: udpFrame(1, 2, 1), Key: odp.FlowKey{odp.InPort(1)}, Actions: odp.Actions{odp.Output{Port: 2}}}
	h.dp.Close()
	errs := h.dp.AppendExecute(context.Background(), nil, []*odp.Packet{p, p})
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Fatalf("closed datapath: %v", errs)
	}
}

// A batch of AppendExecute allocates no more than Execute does for its
// packets one by one (the compiled actions of each), nothing for the
// batch itself: errs is the caller's.
func TestAppendExecuteAllocs(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts under the race detector")
	}
	dp, err := New("tdpallocs", WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	for _, name := range []string{"a1", "a2"} {
		// Nobody reads the peers: frames beyond the queue are dropped by
		// the port, and no test goroutine allocates while counting.
		if _, err := dp.AddPort(context.Background(), odp.PortSpec{Name: name, Type: PortMemory, Options: map[string]string{"queue": "8192"}}); err != nil {
			t.Fatal(err)
		}
	}
	const batch = 16
	pkts := make([]*odp.Packet, batch)
	for i := range pkts {
		pkts[i] = &odp.Packet{Data: udpFrame(1, 2, uint16(i)), Key: odp.FlowKey{odp.InPort(1)}, Actions: odp.Actions{odp.Output{Port: 2}}}
	}
	ctx := context.Background()
	errs := make([]error, 0, batch)
	errs = dp.AppendExecute(ctx, errs[:0], pkts) // warm: the buffers
	one := testing.AllocsPerRun(100, func() {
		if err := dp.Execute(ctx, pkts[0]); err != nil {
			t.Fatal(err)
		}
	})
	many := testing.AllocsPerRun(100, func() {
		errs = dp.AppendExecute(ctx, errs[:0], pkts)
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if many > batch*one {
		t.Errorf("a batch of %d allocates %v times, %d executes %v", batch, many, batch, batch*one)
	}
}
