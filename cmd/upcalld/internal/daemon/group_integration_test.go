//go:build integration

package daemon

import "testing"

// TestIntegrationGroups is scenarioGroups (stateful_linux_test.go) on the
// kernel datapath, in the VM runner.
func TestIntegrationGroups(t *testing.T) { scenarioGroups(t, openKernel) }
