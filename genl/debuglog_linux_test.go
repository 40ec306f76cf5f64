//go:build !genl_stub

package genl

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/odp"
)

// TestDebugLogger checks that SetDebugLogger logs each request and
// reply of the exchange, single and batched, and nothing once unset.
func TestDebugLogger(t *testing.T) {
	k := newFake(t, func(r fakeReq) ([]fakeMsg, error) {
		if r.Cmd == dpCmdGet {
			return []fakeMsg{{Cmd: dpCmdNew, Data: dpReply(t, 7, "br0", 3, nil)}}, nil
		}
		return nil, kerr{errno: unix.EINVAL}
	})
	c := k.client()
	var buf bytes.Buffer
	SetDebugLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { SetDebugLogger(nil) })
	if _, err := c.getDatapath("br0"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`msg="netlink request" op="ovs_datapath get`, `msg="netlink reply"`, "seq="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	flows := []*odp.Flow{{Key: odp.FlowKey{odp.UnknownKey{Type: 3, Data: []byte{1, 0, 0, 0}}}}}
	errs, err := c.putFlows(7, flows, odp.PutCreate, flowOptions{})
	if err != nil || errs[0] == nil {
		t.Fatalf("PutFlows: %v %v, want a per-flow EINVAL", errs, err)
	}
	if out := buf.String(); !strings.Contains(out, `msg="netlink request" op="ovs_flow put batch"`) || !strings.Contains(out, `msg="netlink error"`) {
		t.Errorf("batch log:\n%s", out)
	}
	buf.Reset()
	SetDebugLogger(nil)
	if _, err := c.getDatapath("br0"); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("logged after SetDebugLogger(nil): %s", buf.String())
	}
}
