package main

import (
	"os"
	"testing"
)

// TestMain runs dpctl's main instead of the tests when DPCTL_TEST_MAIN
// is set: the integration tests run the test binary itself as dpctl,
// without a build inside the VM.
func TestMain(m *testing.M) {
	if os.Getenv("DPCTL_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
