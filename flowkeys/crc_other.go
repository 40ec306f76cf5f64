//go:build (!amd64 && !arm64) || purego

package flowkeys

// initCRC keeps the table-driven CRC32C: this build has no assembly.
func initCRC() {}
