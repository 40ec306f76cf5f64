//go:build integration

package daemon

import "testing"

// TestIntegrationMirror is scenarioMirror (mirror_linux_test.go) on the
// kernel datapath, in the VM runner.
func TestIntegrationMirror(t *testing.T) { scenarioMirror(t, openKernel) }
