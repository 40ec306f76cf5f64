package conntrack

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Transparent huge pages for the bucket array.
//
// A lookup touches one bucket line at a random place in the array: at
// 1,000,000 connections the array is 32 MB, 8,192 pages of 4 KB, and a
// thousand active connections' buckets are about a thousand distinct
// pages, more than the TLB holds, so that most lookups walk the page
// tables. On 2 MB pages the same array is 16 TLB entries
// (BenchmarkEstablishedHot). Go's runtime does not ask for huge pages
// on its heap, and with the kernel's default THP setting ("madvise") a
// range gets them only if asked, so newTable asks for the huge pages
// that lie wholly inside the array (MADV_HUGEPAGE; the array holds Go
// pointers and stays on the Go heap). Memory the array's allocation
// took fresh from the kernel is then faulted in as huge pages; memory
// the heap had used before is collapsed later by khugepaged. The advice
// stays on the range after the tracker is collected, on memory the
// heap reuses; the array is the tracker's for its whole life.
//
// Without transparent huge pages (no hpage_pmd_size, the kernel refusing
// the advice, GODEBUG=disablethp=1) nothing is asked or the refusal is
// ignored: the table is the same, on 4 KB pages.

// madvise is unix.Madvise; a test replaces it to see the calls or make
// them fail.
var madvise = unix.Madvise

// hugePageSize is the size of a transparent huge page, or 0 when the
// kernel has none or the program disabled them (GODEBUG=disablethp=1,
// which the runtime honours for its own heap too).
var hugePageSize = sync.OnceValue(func() uintptr {
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		if kv == "disablethp=1" {
			return 0
		}
	}
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n == 0 || n&(n-1) != 0 {
		return 0
	}
	return uintptr(n)
})

// adviseHuge asks for transparent huge pages on the huge pages that lie
// wholly inside the n bytes at p, and returns how many bytes it asked
// for (0 for a range that holds no whole huge page, or when the kernel
// has none), or the kernel's refusal.
func adviseHuge(p unsafe.Pointer, n uintptr) (uintptr, error) {
	off, length := hugeRange(uintptr(p), n, hugePageSize())
	if length == 0 {
		return 0, nil
	}
	if err := madvise(unsafe.Slice((*byte)(unsafe.Add(p, off)), length), unix.MADV_HUGEPAGE); err != nil {
		return 0, err
	}
	return length, nil
}

// hugeRange is the part of the n bytes at address start made of whole
// huge pages of size bytes (0: none): its offset from start and length
// (0 when it holds none).
func hugeRange(start, n, size uintptr) (off, length uintptr) {
	if size == 0 || n < size {
		return 0, 0
	}
	beg := (start + size - 1) &^ (size - 1)
	end := (start + n) &^ (size - 1)
	if beg >= end {
		return 0, 0
	}
	return beg - start, end - beg
}
