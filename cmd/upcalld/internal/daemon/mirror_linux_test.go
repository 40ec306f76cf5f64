package daemon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/policy"
	"github.com/ovsdp/ovsdp/testenv"
)

// scenarioMirror: three hosts on a learning switch, the third the
// output port of a mirror of the first's port (--mirror PORT0:PORT2).
// A ping from host 0 to host 1 works, and host 2 sees its echo requests
// (received on port 0) and replies (sent to port 0); it cannot reach
// host 1 itself (normal leaves a mirror's port out); the megaflows from
// and to port 0 carry the copy, and no other does.
func scenarioMirror(t *testing.T, open func(t testing.TB) odp.Datapath) {
	tp := newTopoWith(t, 3, open, Config{}, func(names []string, cfg *Config) {
		m, err := policy.ParseMirror(names[0] + ":" + names[2])
		if err != nil {
			t.Fatal(err)
		}
		cfg.Mirrors = []policy.MirrorSpec{m}
	})
	mon := tp.hosts[2].Capture(t, tp.veths[2].Name)
	if err := tp.hosts[0].Ping(hostIP(1), 10*time.Second); err != nil {
		t.Fatalf("ping from host 0 to host 1: %v", err)
	}
	ip := func(i int) []byte { return net.ParseIP(hostIP(i)).To4() }
	isEcho := func(f testenv.Frame, typ byte, src, dst int) bool {
		d := f.Data
		return !f.Outgoing && len(d) >= 42 && binary.BigEndian.Uint16(d[12:]) == 0x0800 && d[23] == 1 && d[34] == typ &&
			bytes.Equal(d[26:30], ip(src)) && bytes.Equal(d[30:34], ip(dst))
	}
	for _, c := range []struct {
		what     string
		typ      byte
		src, dst int
	}{{"echo request received on port 0", 8, 0, 1}, {"echo reply sent to port 0", 0, 1, 0}} {
		if _, err := mon.WaitFor(5*time.Second, func(f testenv.Frame) bool { return isEcho(f, c.typ, c.src, c.dst) }); err != nil {
			t.Errorf("the mirror's port did not see the %s: %v", c.what, err)
		}
	}
	// Host 2 is reserved for mirroring: normal drops what it sends.
	if err := tp.hosts[2].Ping(hostIP(1), 1500*time.Millisecond); err == nil {
		t.Error("host 2, the mirror's output port, reached host 1 through normal")
	}
	// Every flow from or to port 0 carries the copy; no other does.
	for _, f := range dumpFlows(t, tp.dp) {
		key, acts, _ := strings.Cut(f, " actions:")
		from0 := strings.Contains(key, fmt.Sprintf("in_port(%d)", tp.ports[0]))
		to0 := strings.Contains(","+acts+",", fmt.Sprintf(",%d,", tp.ports[0]))
		copied := strings.Contains(","+acts+",", fmt.Sprintf(",%d,", tp.ports[2]))
		if (from0 || to0) && acts != "drop" && !copied {
			t.Errorf("flow %s: selected by the mirror but not copied to port %d", f, tp.ports[2])
		}
		if !from0 && !to0 && copied {
			t.Errorf("flow %s: copied to the mirror's port though the mirror does not select it", f)
		}
	}
}
