package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
)

// TestExplainPut checks that a kernel EINVAL for a flow is reported with
// the reason odp's validation predicts instead of "invalid argument",
// and that other errors, and flows odp accepts, are left as they are.
func TestExplainPut(t *testing.T) {
	kernelEINVAL := func() error {
		return fmt.Errorf("genl: ovs_flow new: %w", &genl.Error{Op: "ovs_flow new", Errno: unix.EINVAL, Err: syscall.EINVAL})
	}
	flow := func(s string) *odp.Flow {
		k, m, err := odp.ParseMaskedKey(s)
		if err != nil {
			t.Fatal(err)
		}
		return &odp.Flow{Key: k, Mask: m}
	}
	for _, tc := range []struct {
		key  string
		want string
	}{
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=1)", "the kernel rejects the flow (EINVAL): key: missing key attribute icmp: the kernel requires icmp() when ipv4 proto=1"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17/0xf0),udp(dst=53)", "the kernel rejects the flow (EINVAL): mask: unexpected mask attribute udp"},
		{"in_port(1),eth(),eth_type(0x0800),ipv4(proto=17),udp(dst=53)", "updating flow table: invalid argument"},
	} {
		err := fmt.Errorf("updating flow table: %w", explainPut(flow(tc.key), kernelEINVAL()))
		if msg := errorMessage(err); !strings.Contains(msg, tc.want) || strings.Contains(msg, "genl:") {
			t.Errorf("%s: %q, want %q", tc.key, msg, tc.want)
		}
	}
	other := fmt.Errorf("genl: ovs_flow new: %w", &genl.Error{Op: "ovs_flow new", Errno: unix.EEXIST, Err: syscall.EEXIST})
	if got := explainPut(flow("in_port(1),eth(),eth_type(0x0800),ipv4(proto=1)"), other); got != other {
		t.Errorf("EEXIST changed: %v", got)
	}
}
