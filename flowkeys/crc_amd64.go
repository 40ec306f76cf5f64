//go:build amd64 && !purego

package flowkeys

import "golang.org/x/sys/cpu"

// crc32cWordsSSE42 is the plain CRC32C of n words at p, with the SSE4.2
// CRC32 instruction over 8 bytes at a time.
//
//go:noescape
func crc32cWordsSSE42(crc uint32, p *uint64, n int) uint32

func initCRC() {
	if cpu.X86.HasSSE42 {
		crcWords = crc32cWordsSSE42
		crcHardware = true
	}
}
