//go:build arm64 && !purego

package flowkeys

import "golang.org/x/sys/cpu"

// crc32cWordsARM64 is the plain CRC32C of n words at p, with the ARMv8
// CRC32CX instruction over 8 bytes at a time.
//
//go:noescape
func crc32cWordsARM64(crc uint32, p *uint64, n int) uint32

func initCRC() {
	if cpu.ARM64.HasCRC32 {
		crcWords = crc32cWordsARM64
		crcHardware = true
	}
}
