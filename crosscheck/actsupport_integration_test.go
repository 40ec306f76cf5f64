//go:build integration

package crosscheck

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/internal/actsupport"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/testenv"
)

// TestIntegrationActionSupport puts every case of actsupport.Cases on a
// kernel datapath and checks the kernel's answer against the table
// (userdp's column is checked by userdp's TestActionSupportTable).
func TestIntegrationActionSupport(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireKernelModule(t, "openvswitch")
	dp, cleanup, err := SystemOpener(testenv.NewName())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ctx := context.Background()
	for _, c := range actsupport.Cases {
		key, mask, err := odp.ParseMaskedKey(c.Key)
		if err != nil {
			t.Fatal(err)
		}
		acts, err := odp.ParseActions(c.Actions)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate)
		got := actsupport.Accepted
		switch {
		case err == nil:
		case errors.Is(err, syscall.EINVAL):
			got = actsupport.Invalid
		default:
			t.Errorf("%s %s: %v", c.Key, c.Actions, err)
			continue
		}
		if got != c.Kernel {
			t.Errorf("%s %s: the kernel says %v (%v), the table %v", c.Key, c.Actions, got, err, c.Kernel)
		} else {
			t.Logf("%s %s: %v", c.Key, c.Actions, got)
		}
		if err := dp.FlushFlows(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The plain set(nsh), which the text parser cannot give, with the
	// base header, the context or both: Linux 6.1 refuses each (and
	// userdp does, exec_nsh.go).
	key, mask, _ := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x894f),nsh(np=1)")
	for _, n := range []odp.NSH{
		{HasBase: true, MDType: 1, NP: 1, PathHdr: 0x503, HasMD1: true, Context: [4]uint32{1, 2, 3, 4}},
		{HasBase: true, MDType: 1, NP: 1, PathHdr: 0x503},
		{HasMD1: true, Context: [4]uint32{1, 2, 3, 4}},
	} {
		acts := odp.Actions{odp.Set{Key: n}, odp.Output{Port: 2}}
		if _, err := dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("plain %s: %v, want EINVAL as Linux 6.1 answered", acts, err)
		} else {
			t.Logf("plain %s: %v", acts, err)
		}
	}
}
