package userdp

import (
	"context"
	"strings"
	"testing"

	"github.com/ovsdp/ovsdp/internal/actsupport"
	"github.com/ovsdp/ovsdp/odp"
)

// TestActionSupportTable puts every case of actsupport.Cases(), at least
// one for every odp action type, and checks userdp's answer; where
// userdp refuses what Linux 6.1 accepts, the refusal must be
// odp.ErrUnsupported with a documented reason (the package comment
// lists them). The kernel's column is checked in the VM
// (crosscheck's TestIntegrationActionSupport).
func TestActionSupportTable(t *testing.T) {
	h := newHarness(t, 3)
	covered := map[odp.ActionType]bool{}
	cases, err := actsupport.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		covered[c.Type] = true
		if c.Kernel != c.Userdp && c.Reason == "" {
			t.Errorf("%s %s: kernel %v, userdp %v, and no reason", c.Key, c.Actions, c.Kernel, c.Userdp)
		}
		if c.Kernel == actsupport.Accepted && c.Userdp == actsupport.Invalid {
			t.Errorf("%s %s: userdp must not say EINVAL to what the kernel accepts", c.Key, c.Actions)
		}
		f, err := c.Flow()
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.dp.PutFlow(context.Background(), f, odp.PutCreate)
		got, ok := actsupport.AnswerOf(err)
		if !ok {
			t.Errorf("%s %s: %v", c.Key, c.Actions, err)
			continue
		}
		if got != c.Userdp {
			t.Errorf("%s %s: %v (%v), the table says %v", c.Key, c.Actions, got, err, c.Userdp)
		}
		if got == actsupport.Unsupported && !strings.Contains(err.Error(), c.Type.String()) {
			t.Errorf("%s %s: error %q does not name the action", c.Key, c.Actions, err)
		}
		h.dp.FlushFlows(context.Background())
	}
	for at := odp.ActionType(1); at < 64; at++ {
		if name := at.String(); !strings.HasPrefix(name, "action") && !covered[at] {
			t.Errorf("action type %s has no case in actsupport.Cases", name)
		}
	}
}
