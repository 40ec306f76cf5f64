package conntrack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ovsdp/ovsdp/internal/header"
)

// IP fragment reassembly before tracking, as the kernel's ct action does
// it (net/openvswitch/conntrack.c handle_fragments over ip_defrag and
// nf_ct_frag6_gather, Linux 6.1), with the settings and counters of Open
// vSwitch's userspace reassembler (lib/ipf.c) for the ipf-* commands.
//
// What is the kernel's:
//   - Fragments are queued per (addresses, IP ID, protocol for IPv4,
//     zone): the kernel's defrag user is IP_DEFRAG_CONNTRACK_IN plus the
//     zone. A queue lives FragTimeout (30 s, ipfrag_time) from its first
//     fragment; then its fragments are dropped (no ICMP: the kernel sends
//     none for a conntrack user).
//   - A fragment is placed as inet_frag_queue_insert places it: in the
//     "runs" of fragments that arrived in order; one that lies wholly
//     within a run is a duplicate and is dropped, the queue kept; one that
//     overlaps anything else makes the whole queue be dropped (RFC 5722).
//   - IPv4 (ip_frag_queue): a non-last fragment whose end is not a
//     multiple of 8 is cut down to one; a last fragment that ends before
//     data already received, or a second last fragment with another end,
//     or data beyond a known end, or an empty fragment drops the whole
//     queue; a datagram over 65535 bytes is dropped on completion.
//   - IPv6 (nf_ct_frag6_queue): a fragment ending beyond 65535 is
//     dropped; a non-last fragment whose end is not a multiple of 8 drops
//     the queue and passes through untracked (nf_ct_frag6_gather's
//     -EPROTO, which it turns into 0); an inconsistent last fragment or
//     an empty one is dropped alone; a duplicate is dropped silently; a
//     first fragment that does not hold its whole upper-layer header
//     (ipv6frag_thdr_truncated) and a jumbogram pass untracked.
//   - The reassembled datagram is the offset-0 fragment's link-layer and
//     IP header with all the data; IPv4's header gets the total length,
//     DF only if every fragment of the largest size had DF (max_df_size),
//     and a new checksum; IPv6 loses its fragment header. Its MRU is the
//     largest fragment's IP length (IPv4 IPCB frag_max_size; IPv6 40 plus
//     the largest payload length), and the fragments' data lengths are
//     kept in offset order so that output can send them again as they
//     came (the kernel keeps them as the skb's frag_list; see Refragment).
//   - Memory is bounded: at most MaxBytes of fragment data (the kernel's
//     ipfrag_high_thresh, 4 MiB) and, as in Open vSwitch, at most MaxFrags
//     fragments (1000) are held; a fragment beyond either is dropped (the
//     kernel's inet_frag_find finds no queue: -ENOMEM).
//
// What is Open vSwitch's: turning reassembly off per family (a fragment
// then passes untracked, as the kernel's ct leaves a fragment it cannot
// reassemble: +trk+inv), a minimum fragment size (a non-last fragment
// whose frame is smaller is dropped; 0, the default, means none, as in
// the kernel), and the counters. Not done: the kernel's
// ipfrag_max_dist check (a queue re-initialised after 64 fragments from
// the same source arrived between two of its own), IPv6 link-local
// queues keyed by input interface, and the ECN consistency checks.

// FragTimeout is how long a fragment queue waits for its missing
// fragments (ipfrag_time and nf_conntrack_frag6_timeout: 30 s).
const FragTimeout = 30 * time.Second

// Default reassembly limits.
const (
	DefaultMaxFrags = 1000    // Open vSwitch's IPF_MAX_FRAGS_DEFAULT
	DefaultMaxBytes = 4 << 20 // the kernel's ipfrag_high_thresh
	// MaxFragsLimit is the largest maximum ipf-set-max-nfrags accepts
	// (IPF_NFRAG_UBOUND).
	MaxFragsLimit = 5000
	// MinFragSizeLimit is the smallest minimum fragment size
	// ipf-set-min-frag accepts, for either family
	// (IPF_V4_FRAG_SIZE_LBOUND, IPF_V6_FRAG_SIZE_LBOUND).
	MinFragSizeLimit = 400
)

// FragVerdict is what Gather did with a fragment.
type FragVerdict uint8

// Verdicts of Gather.
const (
	// FragHeld: the fragment is kept until its datagram completes; the
	// packet goes no further (the kernel's -EINPROGRESS, no error).
	FragHeld FragVerdict = iota
	// FragDone: the fragment completed its datagram, now in the
	// Reassembled.
	FragDone
	// FragPass: the packet is not reassembled and goes on as it is (the
	// kernel tracks it as a whole packet: a fragment without its L4
	// header is invalid).
	FragPass
	// FragDropped: the fragment was dropped (Gather's error says why).
	FragDropped
)

// Errors of Gather (wrapped with the details).
var (
	ErrFragOverlap  = errors.New("conntrack: fragment overlaps another of its datagram")
	ErrFragInvalid  = errors.New("conntrack: invalid fragment")
	ErrFragNoRoom   = errors.New("conntrack: no room for another fragment")
	ErrFragTooSmall = errors.New("conntrack: fragment smaller than the minimum")
	ErrFragDup      = errors.New("conntrack: duplicate fragment")
	// ErrFragOff: reassembly of the family is turned off (FragPass; the
	// fragment is then invalid, not tracked as a whole packet).
	ErrFragOff = errors.New("conntrack: fragment reassembly is off")
)

// Reassembled is a datagram that Gather completed.
type Reassembled struct {
	// Headroom is how many bytes Gather leaves free before Frame in Buf
	// (set by the caller).
	Headroom int
	// Buf is the datagram's own memory: Headroom bytes, then Frame.
	Buf []byte
	// Frame is the offset-0 fragment's link-layer header followed by the
	// whole IP datagram; L3 is the IP header's offset in it.
	Frame []byte
	L3    int
	// Frag describes the fragments, for Refragment.
	Frag FragInfo
}

// FragInfo is what output needs to fragment a reassembled datagram
// again as the kernel does (see Refragment).
type FragInfo struct {
	// MRU is the largest fragment's IP length (the kernel's
	// OVS_CB(skb)->mru); 0 for a packet that was not reassembled.
	MRU uint16
	// V6 says the datagram is IPv6. ID is its IPv6 fragment
	// identification (IPv4's is in the header).
	V6 bool
	ID uint32
	// Sizes are the fragments' data lengths in offset order; nil when
	// they are not known (a packet executed with an MRU from userspace).
	Sizes []uint16
}

// DefragConfig configures a Defrag; its zero value means the defaults.
type DefragConfig struct {
	// MaxFrags and MaxBytes bound the fragments held (0: the defaults).
	MaxFrags, MaxBytes int
	// Timeout is a queue's lifetime (0: FragTimeout).
	Timeout time.Duration
}

// FragStats are one family's reassembly counters (Open vSwitch's
// ipf-get-status names, and why the others were dropped).
type FragStats struct {
	// Accepted fragments were queued; Completed were in a datagram that
	// completed; Expired were dropped when their queue timed out.
	Accepted, Completed, Expired uint64
	// TooSmall fragments were under the minimum size; Overlap
	// overlapped a fragment of their datagram (or duplicated one);
	// Purged were dropped with their queue when another fragment made
	// it invalid (an overlap, an inconsistent end, an oversized
	// datagram).
	TooSmall, Overlap, Purged uint64
	// NoRoom fragments found the limits reached; Invalid were malformed
	// or inconsistent (dropped alone, or dropping their queue).
	NoRoom, Invalid uint64
}

// FragSettings are a family's settings.
type FragSettings struct {
	Enabled     bool
	MinFragSize uint32
}

// FragQueueInfo describes one pending datagram (ipf-get-status -m).
type FragQueueInfo struct {
	V6       bool
	Src, Dst [16]byte
	ID       uint32
	Proto    uint8
	Zone     uint16
	// Frags is the number of fragments held; First and Last whether the
	// first and last fragments are among them.
	Frags       int
	First, Last bool
}

// Defrag reassembles IPv4 and IPv6 fragments. It is safe for concurrent
// use (one lock: fragments are rare and never on the path of whole
// packets).
type Defrag struct {
	clock   func() int64
	timeout int64

	enabled  [2]atomic.Bool
	minSize  [2]atomic.Uint32
	maxFrags atomic.Uint32
	maxBytes int

	pending atomic.Int32 // len(queues), read without the lock by Expire

	mu     sync.Mutex
	queues map[fragKey]*fragQueue
	// oldest and newest are the queues in creation order, which is
	// their expiry order (a queue's timer starts with it and is never
	// pushed back).
	oldest, newest *fragQueue
	nfrags, nbytes int

	stats [2]fragCounters
}

type fragCounters struct {
	accepted, completed, expired, tooSmall, overlap, purged, noRoom, invalid atomic.Uint64
}

type fragKey struct {
	src, dst [16]byte
	id       uint32
	zone     uint16
	proto    uint8
	v6       bool
}

type fragment struct {
	off, end int
	data     []byte
}

type fragRun struct{ start, end int }

type fragQueue struct {
	key        fragKey
	expires    int64
	prev, next *fragQueue
	frags      []fragment // by offset
	runs       []fragRun  // by offset
	tailEnd    int        // the highest end received
	length     int        // the datagram's length, as far as known
	meat       int        // data bytes received
	first      bool
	last       bool
	maxSize    int    // the largest fragment's IP length
	maxDFSize  int    // IPv4: the largest with DF
	head       []byte // the offset-0 fragment's link-layer and IP headers
	l3         int    // the IP header's offset in head
	nhOff      int    // IPv6: in head's IP header, the byte naming the fragment header
	bytes      int
}

// NewDefrag returns a reassembler, both families on, no minimum size.
// clock returns nanoseconds on a monotonic scale (nil: the process's).
func NewDefrag(cfg DefragConfig, clock func() int64) *Defrag {
	if clock == nil {
		start := time.Now()
		clock = func() int64 { return int64(time.Since(start)) + 1 }
	}
	d := &Defrag{clock: clock, timeout: int64(cfg.Timeout), maxBytes: cfg.MaxBytes, queues: map[fragKey]*fragQueue{}}
	if d.timeout <= 0 {
		d.timeout = int64(FragTimeout)
	}
	if d.maxBytes <= 0 {
		d.maxBytes = DefaultMaxBytes
	}
	n := cfg.MaxFrags
	if n <= 0 {
		n = DefaultMaxFrags
	}
	d.maxFrags.Store(uint32(n))
	d.enabled[0].Store(true)
	d.enabled[1].Store(true)
	return d
}

func fam(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

// SetEnabled turns reassembly of a family on or off. Off, a fragment
// passes untracked (+trk+inv); the fragments already held stay until
// their queue completes or expires.
func (d *Defrag) SetEnabled(v6, on bool) { d.enabled[fam(v6)].Store(on) }

// SetMinFragSize sets the smallest frame (link-layer header included, as
// Open vSwitch measures it) that a non-last fragment may have; 0 turns
// the check off. Other sizes below MinFragSizeLimit are refused (EINVAL
// in the error), as Open vSwitch refuses them.
func (d *Defrag) SetMinFragSize(v6 bool, size uint32) error {
	if size != 0 && size < MinFragSizeLimit {
		return fmt.Errorf("conntrack: minimum fragment size %d is below %d: %w", size, MinFragSizeLimit, errInvalidSetting)
	}
	d.minSize[fam(v6)].Store(size)
	return nil
}

// SetMaxFrags sets the maximum number of fragments held, from 1 to
// MaxFragsLimit.
func (d *Defrag) SetMaxFrags(n uint32) error {
	if n == 0 || n > MaxFragsLimit {
		return fmt.Errorf("conntrack: maximum of fragments %d is not from 1 to %d: %w", n, MaxFragsLimit, errInvalidSetting)
	}
	d.maxFrags.Store(n)
	return nil
}

// errInvalidSetting is wrapped by the setters' errors.
var errInvalidSetting = syscall.EINVAL

// Settings returns a family's settings.
func (d *Defrag) Settings(v6 bool) FragSettings {
	return FragSettings{Enabled: d.enabled[fam(v6)].Load(), MinFragSize: d.minSize[fam(v6)].Load()}
}

// MaxFrags returns the maximum number of fragments held.
func (d *Defrag) MaxFrags() uint32 { return d.maxFrags.Load() }

// Held returns the number of fragments and data bytes held now (after
// dropping the expired queues).
func (d *Defrag) Held() (frags, bytes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(d.clock())
	return d.nfrags, d.nbytes
}

// Stats returns a family's counters.
func (d *Defrag) Stats(v6 bool) FragStats {
	c := &d.stats[fam(v6)]
	return FragStats{Accepted: c.accepted.Load(), Completed: c.completed.Load(), Expired: c.expired.Load(),
		TooSmall: c.tooSmall.Load(), Overlap: c.overlap.Load(), Purged: c.purged.Load(),
		NoRoom: c.noRoom.Load(), Invalid: c.invalid.Load()}
}

// Queues returns the pending datagrams, oldest first.
func (d *Defrag) Queues() []FragQueueInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(d.clock())
	var out []FragQueueInfo
	for q := d.oldest; q != nil; q = q.next {
		out = append(out, FragQueueInfo{V6: q.key.v6, Src: q.key.src, Dst: q.key.dst, ID: q.key.id, Proto: q.key.proto,
			Zone: q.key.zone, Frags: len(q.frags), First: q.first, Last: q.last})
	}
	return out
}

// Expire drops the queues that timed out; a sweeper calls it so that
// fragments do not wait for the next fragment to be freed.
func (d *Defrag) Expire() {
	if d.pending.Load() == 0 {
		return
	}
	d.mu.Lock()
	d.expire(d.clock())
	d.mu.Unlock()
}

func (d *Defrag) expire(now int64) {
	for q := d.oldest; q != nil && q.expires <= now; q = d.oldest {
		d.stats[fam(q.key.v6)].expired.Add(uint64(len(q.frags)))
		d.kill(q)
	}
}

// kill removes q and frees its fragments.
func (d *Defrag) kill(q *fragQueue) {
	delete(d.queues, q.key)
	d.pending.Add(-1)
	if q.prev != nil {
		q.prev.next = q.next
	} else {
		d.oldest = q.next
	}
	if q.next != nil {
		q.next.prev = q.prev
	} else {
		d.newest = q.prev
	}
	q.prev, q.next = nil, nil
	d.nfrags -= len(q.frags)
	d.nbytes -= q.bytes
}

// purge kills q, counting its fragments as purged.
func (d *Defrag) purge(q *fragQueue) {
	d.stats[fam(q.key.v6)].purged.Add(uint64(len(q.frags)))
	d.kill(q)
}

// fragHeader is what Gather reads from a fragment's IP headers.
type fragHeader struct {
	v6       bool
	key      fragKey
	hlen     int  // IPv4: the header length; IPv6: to the end of the fragment header
	nhOff    int  // IPv6: the offset of the next-header byte that names the fragment header
	l3len    int  // the IP length present (at most the header's)
	ipLen    int  // IPv6: 40 + the payload length field
	off, end int  // the data's offset and end in the datagram
	more     bool // more fragments
	df       bool // IPv4 DF
}

// Gather takes a fragment (frame, with its IP header at l3, that the
// flow key says is a fragment) for the ct action of zone, and queues,
// completes, passes or drops it. For FragDone, out holds the reassembled
// datagram (its own memory). The error of FragDropped and FragPass says
// why; FragHeld's is non-nil only for a dropped duplicate.
func (d *Defrag) Gather(frame []byte, l3 int, v6 bool, zone uint16, out *Reassembled) (FragVerdict, error) {
	c := &d.stats[fam(v6)]
	if !d.enabled[fam(v6)].Load() {
		return FragPass, fmt.Errorf("%w for IPv%d", ErrFragOff, 4+2*fam(v6))
	}
	if l3 < 0 || l3 > len(frame) {
		c.invalid.Add(1)
		return FragDropped, fmt.Errorf("%w: no IP header", ErrFragInvalid)
	}
	var h fragHeader
	var pass bool
	var err error
	if v6 {
		pass, err = parseFrag6(frame[l3:], zone, &h)
	} else {
		err = parseFrag4(frame[l3:], zone, &h)
	}
	if pass {
		return FragPass, err
	}
	if err != nil {
		c.invalid.Add(1)
		return FragDropped, err
	}
	if min := d.minSize[fam(v6)].Load(); min != 0 && h.more && uint32(len(frame)) < min {
		c.tooSmall.Add(1)
		return FragDropped, fmt.Errorf("%w: a %d-byte frame (minimum %d)", ErrFragTooSmall, len(frame), min)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock()
	d.expire(now)
	if d.nfrags >= int(d.maxFrags.Load()) || d.nbytes > d.maxBytes {
		c.noRoom.Add(1)
		return FragDropped, fmt.Errorf("%w: %d fragments, %d bytes held", ErrFragNoRoom, d.nfrags, d.nbytes)
	}
	q := d.queues[h.key]
	if q == nil {
		q = &fragQueue{key: h.key, expires: now + d.timeout, prev: d.newest}
		if d.newest != nil {
			d.newest.next = q
		} else {
			d.oldest = q
		}
		d.newest = q
		d.queues[h.key] = q
		d.pending.Add(1)
	}
	return d.queue(q, &h, frame, l3, out)
}

// queue adds the fragment to q (ip_frag_queue, nf_ct_frag6_queue).
func (d *Defrag) queue(q *fragQueue, h *fragHeader, frame []byte, l3 int, out *Reassembled) (FragVerdict, error) {
	c := &d.stats[fam(h.v6)]
	end := h.end
	invalid := func(dropQueue bool, format string, args ...any) (FragVerdict, error) {
		c.invalid.Add(1)
		if dropQueue {
			d.purge(q)
		} else if len(q.frags) == 0 {
			d.kill(q)
		}
		return FragDropped, fmt.Errorf("%w: "+format, append([]any{ErrFragInvalid}, args...)...)
	}
	if !h.more {
		if end < q.length || (q.last && end != q.length) {
			return invalid(!h.v6, "a last fragment ending at %d where the datagram is %d bytes", end, q.length)
		}
		q.last, q.length = true, end
	} else {
		if end&7 != 0 {
			if h.v6 {
				// The kernel drops the queue and lets the fragment go on
				// untracked.
				c.invalid.Add(1)
				d.purge(q)
				return FragPass, fmt.Errorf("%w: a non-last fragment ending at %d, not a multiple of 8", ErrFragInvalid, end)
			}
			end &^= 7
		}
		if end > q.length {
			if q.last {
				return invalid(!h.v6, "data to %d beyond the datagram's end %d", end, q.length)
			}
			q.length = end
		}
	}
	if end == h.off {
		return invalid(!h.v6, "an empty fragment at %d", h.off)
	}
	switch q.insert(h.off, end) {
	case fragDup:
		c.overlap.Add(1)
		if len(q.frags) == 0 {
			d.kill(q)
		}
		return FragHeld, fmt.Errorf("%w: %d-%d", ErrFragDup, h.off, end)
	case fragOverlap:
		c.overlap.Add(1)
		d.purge(q)
		return FragDropped, fmt.Errorf("%w: %d-%d", ErrFragOverlap, h.off, end)
	}
	data := frame[l3+h.hlen:]
	data = append([]byte(nil), data[:end-h.off]...)
	q.addFrag(fragment{off: h.off, end: end, data: data})
	q.meat += end - h.off
	q.bytes += len(data)
	d.nfrags++
	d.nbytes += len(data)
	c.accepted.Add(1)
	if h.off == 0 {
		q.first = true
		q.head = append([]byte(nil), frame[:l3+h.hlen]...)
		q.l3, q.nhOff = l3, h.nhOff
	}
	// The fragment's size for the MRU: IPv4's IP length as trimmed
	// (ip_frag_queue's fragsize), IPv6's 40 plus its payload length
	// field (nf_ct_frag6_queue's max_size).
	size := h.hlen + (end - h.off)
	if h.v6 {
		size = h.ipLen
	}
	q.maxSize = max(q.maxSize, size)
	if h.df {
		q.maxDFSize = max(q.maxDFSize, size)
	}
	if !q.first || !q.last || q.meat != q.length {
		return FragHeld, nil
	}
	err := q.reassemble(h, out)
	n := uint64(len(q.frags))
	if err != nil {
		d.purge(q)
		return FragDropped, err
	}
	c.completed.Add(n)
	d.kill(q)
	return FragDone, nil
}

const (
	fragOK = iota
	fragDup
	fragOverlap
)

// insert places [off, end) among q's runs as inet_frag_queue_insert.
func (q *fragQueue) insert(off, end int) int {
	if len(q.frags) == 0 {
		q.runs = append(q.runs, fragRun{off, end})
		q.tailEnd = end
		return fragOK
	}
	if q.tailEnd < end {
		if off < q.tailEnd {
			return fragOverlap
		}
		if off == q.tailEnd {
			// The run holding the tail is the last one.
			q.runs[len(q.runs)-1].end = end
		} else {
			q.runs = append(q.runs, fragRun{off, end})
		}
		q.tailEnd = end
		return fragOK
	}
	i := 0
	for ; i < len(q.runs); i++ {
		r := q.runs[i]
		if end <= r.start {
			break
		}
		if off >= r.end {
			continue
		}
		if off >= r.start && end <= r.end {
			return fragDup
		}
		return fragOverlap
	}
	q.runs = append(q.runs, fragRun{})
	copy(q.runs[i+1:], q.runs[i:])
	q.runs[i] = fragRun{off, end}
	return fragOK
}

func (q *fragQueue) addFrag(f fragment) {
	i := len(q.frags)
	for i > 0 && q.frags[i-1].off > f.off {
		i--
	}
	q.frags = append(q.frags, fragment{})
	copy(q.frags[i+1:], q.frags[i:])
	q.frags[i] = f
}

// reassemble builds the datagram (ip_frag_reasm, nf_ct_frag6_reasm).
func (q *fragQueue) reassemble(h *fragHeader, out *Reassembled) error {
	hdr := q.head[q.l3:]
	var hl int
	if h.v6 {
		hl = len(hdr) - header.IPv6FragmentHdrSize // the fragment header goes
	} else {
		hl = len(hdr)
	}
	total := hl + q.length
	if !h.v6 && total > 0xffff {
		return fmt.Errorf("%w: a reassembled IPv4 datagram of %d bytes", ErrFragInvalid, total)
	}
	if h.v6 && total-header.IPv6MinimumSize > 0xffff {
		return fmt.Errorf("%w: a reassembled IPv6 payload of %d bytes", ErrFragInvalid, total-header.IPv6MinimumSize)
	}
	hr := max(out.Headroom, 0)
	out.Buf = make([]byte, hr+q.l3+total)
	b := out.Buf[hr:]
	copy(b, q.head[:q.l3])
	ip := b[q.l3:]
	sizes := make([]uint16, len(q.frags))
	if h.v6 {
		// The unfragmentable part, then the data; the byte that named
		// the fragment header names what it named.
		unfrag := hl
		copy(ip, hdr[:unfrag])
		fh := hdr[unfrag:]
		ip[q.nhOff] = fh[0]
		binary.BigEndian.PutUint16(ip[header.IPv6PayloadLenOffset:], uint16(total-header.IPv6MinimumSize))
		out.Frag = FragInfo{V6: true, ID: binary.BigEndian.Uint32(fh[4:])}
	} else {
		copy(ip, hdr)
		binary.BigEndian.PutUint16(ip[header.IPv4TotalLenOffset:], uint16(total))
		var fo uint16
		if q.maxDFSize == q.maxSize {
			fo = header.IPv4FlagDontFragment
		}
		binary.BigEndian.PutUint16(ip[header.IPv4FlagsFragOffset:], fo)
		binary.BigEndian.PutUint16(ip[header.IPv4ChecksumOffset:], 0)
		binary.BigEndian.PutUint16(ip[header.IPv4ChecksumOffset:], header.Checksum(ip[:hl], 0))
	}
	for i, f := range q.frags {
		copy(ip[hl+f.off:], f.data)
		sizes[i] = uint16(len(f.data))
	}
	out.Frame, out.L3 = b, q.l3
	out.Frag.MRU = uint16(min(q.maxSize, 0xffff))
	out.Frag.Sizes = sizes
	return nil
}

// parseFrag4 reads an IPv4 fragment's header.
func parseFrag4(ip []byte, zone uint16, h *fragHeader) error {
	if len(ip) < header.IPv4MinimumSize || ip[0]>>4 != 4 {
		return fmt.Errorf("%w: an IPv4 header of %d bytes", ErrFragInvalid, len(ip))
	}
	hl := int(ip[0]&0x0f) * 4
	tl := int(binary.BigEndian.Uint16(ip[header.IPv4TotalLenOffset:]))
	if hl < header.IPv4MinimumSize || tl < hl || len(ip) < hl {
		return fmt.Errorf("%w: IPv4 header length %d, total length %d, %d bytes", ErrFragInvalid, hl, tl, len(ip))
	}
	// Beyond the total length is link-layer padding (ovs_skb_network_trim);
	// a packet shorter than it ends where it ends.
	l3len := min(tl, len(ip))
	fo := binary.BigEndian.Uint16(ip[header.IPv4FlagsFragOffset:])
	h.v6, h.hlen, h.l3len = false, hl, l3len
	h.off = int(fo&header.IPv4FragmentOffsetMask) * 8
	h.end = h.off + l3len - hl
	h.more = fo&header.IPv4FlagMoreFragments != 0
	h.df = fo&header.IPv4FlagDontFragment != 0
	h.key = fragKey{id: uint32(binary.BigEndian.Uint16(ip[header.IPv4IDOffset:])), zone: zone, proto: ip[header.IPv4ProtocolOffset]}
	copy(h.key.src[:4], ip[header.IPv4SrcAddrOffset:])
	copy(h.key.dst[:4], ip[header.IPv4DstAddrOffset:])
	return nil
}

// parseFrag6 reads an IPv6 fragment's headers. pass reports a packet
// that the kernel lets through unreassembled (no fragment header where
// the key says there is one, a jumbogram, a first fragment cut short of
// its upper-layer header).
func parseFrag6(ip []byte, zone uint16, h *fragHeader) (pass bool, err error) {
	if len(ip) < header.IPv6MinimumSize || ip[0]>>4 != 6 {
		return false, fmt.Errorf("%w: an IPv6 header of %d bytes", ErrFragInvalid, len(ip))
	}
	pl := int(binary.BigEndian.Uint16(ip[header.IPv6PayloadLenOffset:]))
	if pl == 0 {
		return true, fmt.Errorf("%w: a jumbogram (payload length 0) is not reassembled", ErrFragInvalid)
	}
	l3len := min(header.IPv6MinimumSize+pl, len(ip))
	ip = ip[:l3len]
	nh, off, nhOff := ip[header.IPv6NextHeaderOffset], header.IPv6MinimumSize, header.IPv6NextHeaderOffset
	for nh != 44 {
		var n int
		switch nh {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(ip) < off+8 {
				return true, fmt.Errorf("%w: an extension header cut short", ErrFragInvalid)
			}
			n = (int(ip[off+1]) + 1) * 8
		case 51: // authentication
			if len(ip) < off+8 {
				return true, fmt.Errorf("%w: an extension header cut short", ErrFragInvalid)
			}
			n = (int(ip[off+1]) + 2) * 4
		default:
			return true, fmt.Errorf("%w: no fragment header", ErrFragInvalid)
		}
		nhOff, nh, off = off, ip[off], off+n
	}
	if len(ip) < off+header.IPv6FragmentHdrSize {
		return true, fmt.Errorf("%w: a fragment header cut short", ErrFragInvalid)
	}
	fh := ip[off:]
	fo := binary.BigEndian.Uint16(fh[2:])
	h.v6, h.hlen, h.nhOff, h.l3len, h.ipLen = true, off+header.IPv6FragmentHdrSize, nhOff, l3len, header.IPv6MinimumSize+pl
	h.off = int(fo &^ 7)
	h.end = h.off + l3len - h.hlen
	h.more = fo&1 != 0
	if h.off == 0 && thdrTruncated(fh[0], ip[h.hlen:]) {
		return true, fmt.Errorf("%w: a first fragment without its whole upper-layer header", ErrFragInvalid)
	}
	if h.end > 0xffff {
		return false, fmt.Errorf("%w: a fragment ending at %d, beyond 65535", ErrFragInvalid, h.end)
	}
	h.key = fragKey{v6: true, id: binary.BigEndian.Uint32(fh[4:]), zone: zone}
	copy(h.key.src[:], ip[header.IPv6SrcAddrOffset:])
	copy(h.key.dst[:], ip[header.IPv6DstAddrOffset:])
	return false, nil
}

// thdrTruncated is ipv6frag_thdr_truncated: the first fragment's data
// must hold the upper-layer header (after any extension headers in it).
func thdrTruncated(nh uint8, b []byte) bool {
	for {
		switch nh {
		case 0, 43, 60, 51:
			// ipv6_skip_exthdr: an extension header cut short is not
			// "truncated" here (the check gives up).
			if len(b) < 8 {
				return false
			}
			n := (int(b[1]) + 1) * 8
			if nh == 51 {
				n = (int(b[1]) + 2) * 4
			}
			if len(b) < n {
				return false
			}
			nh, b = b[0], b[n:]
			continue
		}
		break
	}
	need := 1 // any other protocol: one byte
	switch nh {
	case header.IPProtoTCP:
		need = 20
	case header.IPProtoUDP:
		need = 8
	case header.IPProtoICMPv6:
		need = 8 // struct icmp6hdr
	}
	return len(b) < need
}
