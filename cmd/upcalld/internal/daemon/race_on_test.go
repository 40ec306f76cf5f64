//go:build race

package daemon

// raceEnabled: the tests run under the race detector, whose sync.Pool
// drops items at random: allocation counts then mean nothing.
const raceEnabled = true
