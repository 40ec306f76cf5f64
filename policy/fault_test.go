package policy

import "testing"

// setTestFault makes decide run the unsound variant f until the test
// ends. Tests that set a fault must not run in parallel with any test
// that calls Decide.
func setTestFault(t *testing.T, f fault) {
	t.Helper()
	if testFault != faultNone {
		t.Fatalf("a fault (%d) is already set: tests that set one cannot run in parallel", testFault)
	}
	testFault = f
	t.Cleanup(func() { testFault = faultNone })
}
