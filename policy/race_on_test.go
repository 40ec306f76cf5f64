//go:build race

package policy

// raceEnabled: the tests run under the race detector (make race), which
// makes the soundness property test's walks about 20 times slower; it
// then runs fewer rule sets (the soundness runs of make unit do them all).
const raceEnabled = true
