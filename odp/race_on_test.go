//go:build race

package odp

// raceEnabled: the tests run under the race detector, whose sync.Pool
// drops items at random: allocation counts then mean nothing.
const raceEnabled = true
