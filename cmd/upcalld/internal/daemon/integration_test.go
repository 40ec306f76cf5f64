//go:build integration

package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// The scenarios on the kernel datapath (system@), in the VM runner:
// go test -tags integration -exec $(pwd)/bin/vmrun -run '^TestIntegration' ./cmd/upcalld/...

var kSeq int

func openKernel(t *testing.T) odp.Datapath {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	kSeq++
	d, err := genl.Create(fmt.Sprintf("upk%d", kSeq))
	if err != nil {
		t.Fatalf("creating a kernel datapath: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Delete(); err != nil {
			t.Errorf("deleting the datapath: %v", err)
		}
		d.Close()
	})
	return d
}

func TestIntegrationLearningSwitch(t *testing.T) { scenarioLearning(t, openKernel) }

func TestIntegrationRewrite(t *testing.T) { scenarioRewrite(t, openKernel) }

// The flood is 20,000 new flows per second for 10 s
// (TestNamespaceOverload runs it on the host). Under TCG the generator
// itself cannot send that many (it managed 3,000-6,000 frames/s while
// competing with the daemon for the VM's two CPUs), so the VM sends
// 3,000 per second for 10 s: what a TCG guest can keep up for the whole
// 10 s, still far more than the handlers there can handle (about 1,000
// upcalls/s), so the overload path is what is tested.
func TestIntegrationOverload(t *testing.T) {
	scenarioOverload(t, openKernel, 3000, 10*time.Second)
}

// A second daemon on the same kernel datapath adopts the flows: the
// first one's flows stay and keep forwarding across the restart.
func TestIntegrationRestartAdopts(t *testing.T) {
	tp := newTopo(t, 2, openKernel, Config{})
	if err := tp.hosts[0].Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tp.d.RevalidateNow(context.Background())
	before := dumpFlows(t, tp.dp)
	tp.stop()
	d2, err := New(Config{Datapath: tp.dp, Handlers: 1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := d2.RevalidateNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := dumpFlows(t, tp.dp)
	if len(after) != len(before) || r.Deleted != 0 {
		t.Errorf("after adoption: %+v\nbefore:\n%v\nafter:\n%v", r, before, after)
	}
}
