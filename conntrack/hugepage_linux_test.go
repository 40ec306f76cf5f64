package conntrack

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// madviseCall is one call a fake madvise saw.
type madviseCall struct {
	addr, len uintptr
	advice    int
}

// fakeMadvise replaces madvise for the test: it records each call and
// returns err.
func fakeMadvise(t *testing.T, err error) *[]madviseCall {
	t.Helper()
	var calls []madviseCall
	old := madvise
	madvise = func(b []byte, advice int) error {
		calls = append(calls, madviseCall{uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), advice})
		return err
	}
	t.Cleanup(func() { madvise = old })
	return &calls
}

// bucketRange is the bucket array's address range.
func bucketRange(tb *table) (lo, hi uintptr) {
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(tb.buckets)))
	return lo, lo + uintptr(len(tb.buckets))*unsafe.Sizeof(bucket{})
}

// TestBucketsAdvisedHuge: a table's bucket array of a huge page and more
// is advised onto huge pages, every huge page wholly inside it and
// nothing outside it; a smaller one is not advised.
func TestBucketsAdvisedHuge(t *testing.T) {
	size := hugePageSize()
	if size == 0 {
		t.Skip("no transparent huge pages on this kernel (hpage_pmd_size)")
	}
	calls := fakeMadvise(t, nil)
	tb := newTable(1000000, hashSeed{})
	lo, hi := bucketRange(tb)
	if len(*calls) != 1 {
		t.Fatalf("%d madvise calls for a %d-byte bucket array, want 1", len(*calls), hi-lo)
	}
	c := (*calls)[0]
	if c.advice != unix.MADV_HUGEPAGE {
		t.Errorf("advice %d, want MADV_HUGEPAGE", c.advice)
	}
	if c.addr%size != 0 || c.len%size != 0 || c.len == 0 {
		t.Errorf("advised %#x+%#x: not whole huge pages", c.addr, c.len)
	}
	if c.addr < lo || c.addr+c.len > hi {
		t.Errorf("advised %#x-%#x outside the array %#x-%#x", c.addr, c.addr+c.len, lo, hi)
	}
	if c.addr-lo >= size || hi-(c.addr+c.len) >= size {
		t.Errorf("advised %#x-%#x leaves a whole huge page of the array %#x-%#x out", c.addr, c.addr+c.len, lo, hi)
	}
	if tb.huge != c.len {
		t.Errorf("table.huge %d, want %d", tb.huge, c.len)
	}

	*calls = nil
	small := newTable(1000, hashSeed{}) // 32 KB of buckets
	if len(*calls) != 0 || small.huge != 0 {
		t.Errorf("a %d-bucket table was advised: %v", len(small.buckets), *calls)
	}
}

// TestBucketsHugeRefused: when the kernel refuses the advice (EINVAL:
// no transparent huge pages), the tracker works as without it.
func TestBucketsHugeRefused(t *testing.T) {
	if hugePageSize() == 0 {
		t.Skip("no transparent huge pages on this kernel (hpage_pmd_size)")
	}
	calls := fakeMadvise(t, unix.EINVAL)
	tr, _ := newTestTracker(t, Config{MaxConns: 1 << 17}) // 4 MB of buckets
	if len(*calls) != 1 {
		t.Fatalf("%d madvise calls, want 1", len(*calls))
	}
	if tr.tab.huge != 0 {
		t.Errorf("table.huge %d after a refusal, want 0", tr.tab.huge)
	}
	fill(t, tr, 1000)
	for i := 0; i < 1000; i++ {
		s, err := run(t, tr, &Packet{Tuple: rev(t, connTuple(i)), Len: 64}, Action{})
		if err != nil || s.Flags != trkEst|StateReply {
			t.Fatalf("connection %d's reply: state %s, %v", i, stateString(s.Flags), err)
		}
	}
}

// TestHugeRange: the advised part of a range is exactly its whole huge
// pages, and nothing for a range that holds none.
func TestHugeRange(t *testing.T) {
	const size = 2 << 20
	const base = 64 * size // a huge page boundary
	for _, c := range []struct {
		off, n   uintptr // the range, from base
		beg, end uintptr // the advised part, from base; beg == end: none
	}{
		{0, size, 0, size},
		{0, size - 1, 0, 0},
		{8192, size, 0, 0},
		{8192, 2 * size, size, 2 * size},
		{8192, 3*size - 8192, size, 3 * size},
		{size - 8192, 4 * size, size, 4 * size},
		{0, 0, 0, 0},
	} {
		off, length := hugeRange(base+c.off, c.n, size)
		if want := c.end - c.beg; length != want || want != 0 && base+c.off+off != base+c.beg {
			t.Errorf("range +%#x+%#x: advised +%#x+%#x, want +%#x+%#x", c.off, c.n, c.off+off, length, c.beg, want)
		}
	}
	if _, length := hugeRange(base, 8*size, 0); length != 0 {
		t.Errorf("with no huge pages: advised %d bytes", length)
	}
}

// TestBucketsHugeKernel: with the real madvise, the kernel marks the
// bucket array's memory for huge pages (VmFlags "hg" in
// /proc/self/smaps), unless THP is off on this machine.
func TestBucketsHugeKernel(t *testing.T) {
	if hugePageSize() == 0 {
		t.Skip("no transparent huge pages on this kernel (hpage_pmd_size)")
	}
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil && strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are off on this machine (enabled: never)")
	}
	tb := newTable(1000000, hashSeed{})
	if tb.huge == 0 {
		t.Fatalf("the bucket array was not advised (madvise refused?)")
	}
	lo, hi := bucketRange(tb)
	mid := (lo + hi) / 2
	flags, err := vmFlags(mid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping of the bucket array's middle (%#x) has VmFlags %q, no hg", mid, flags)
	}
	runtimeKeep = tb
}

var runtimeKeep *table

// vmFlags returns the VmFlags line of the mapping that holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(l, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(l, " ") && !strings.HasSuffix(strings.Fields(l)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
