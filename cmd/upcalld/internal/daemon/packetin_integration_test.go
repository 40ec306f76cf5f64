//go:build integration

package daemon

import "testing"

// TestIntegrationPacketIns is scenarioPacketIns (packetin_linux_test.go)
// on the kernel datapath, in the VM runner: the controller action is a
// userspace action to the daemon's first upcall socket.
func TestIntegrationPacketIns(t *testing.T) { scenarioPacketIns(t, openKernel) }
