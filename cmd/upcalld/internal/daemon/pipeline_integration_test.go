//go:build integration

package daemon

import "testing"

// TestIntegrationContribPipeline is scenarioContribPipeline
// (pipeline_linux_test.go) on the kernel datapath, in the VM runner.
func TestIntegrationContribPipeline(t *testing.T) { scenarioContribPipeline(t, openKernel) }
