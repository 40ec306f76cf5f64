// Package doccheck holds a test that the public packages' documentation
// and their runnable examples agree (every example is described in its
// package's doc comment, every example the doc comment names exists); it
// has no code of its own.
package doccheck
