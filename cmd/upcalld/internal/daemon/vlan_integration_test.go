//go:build integration

package daemon

import "testing"

// TestIntegrationVLAN is scenarioVLAN (vlan_linux_test.go) on the kernel
// datapath: two system@ datapaths joined by a trunk, in the VM runner.
func TestIntegrationVLAN(t *testing.T) { scenarioVLAN(t, openKernel) }
