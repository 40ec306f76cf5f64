//go:build integration

package daemon

import "testing"

// TestIntegrationCTFirewall is scenarioCTFirewall (stateful_linux_test.go) on
// the kernel datapath and the kernel's conntrack, in the VM runner.
func TestIntegrationCTFirewall(t *testing.T) { scenarioCTFirewall(t, openKernel) }
