//go:build integration && linux

package main

import "testing"

// TestIntegrationSelftestsCT performs the kernel selftests' conntrack
// tests (ct_connect_v4, nat_connect_v4, nat_related_v4) on system@
// datapaths with the same dpctl commands that TestSelftestsCTNetdev runs
// on netdev@ (see runSelftest).
func TestIntegrationSelftestsCT(t *testing.T) {
	requireKernel(t)
	for _, s := range selftestsCT {
		t.Run(s.name, func(t *testing.T) { runSelftest(t, "system", s) })
	}
}
