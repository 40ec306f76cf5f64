package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

// The userspace datapath on real veth pairs, as root.

var nsSeq int

func openUserdp(t testing.TB) odp.Datapath {
	nsSeq++
	dp, err := userdp.New(fmt.Sprintf("upns%d", nsSeq), userdp.WithoutLocalPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Close() })
	return dp
}

func TestNamespaceLearningSwitch(t *testing.T) { scenarioLearning(t, openUserdp) }

func TestNamespaceRewrite(t *testing.T) { scenarioRewrite(t, openUserdp) }

// TestNamespaceMirror: scenarioMirror (mirror_linux_test.go).
func TestNamespaceMirror(t *testing.T) { scenarioMirror(t, openUserdp) }

// TestNamespacePacketIns: scenarioPacketIns (packetin_linux_test.go).
func TestNamespacePacketIns(t *testing.T) { scenarioPacketIns(t, openUserdp) }

func TestNamespaceOverload(t *testing.T) {
	scenarioOverload(t, openUserdp, 20000, 10*time.Second)
}
