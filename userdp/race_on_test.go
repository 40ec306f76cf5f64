//go:build race

package userdp

// raceDetector: the tests run under the race detector, whose sync.Pool
// drops items at random: allocation counts then mean nothing.
const raceDetector = true
