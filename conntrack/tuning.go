package conntrack

// Open vSwitch userspace's tracker settings, which the kernel's tracker
// does not have (ct-*-tcp-seq-chk, ct-bkts; the sweep interval is the
// caller's StartSweeper interval).

// SetTCPSeqCheck turns TCP sequence checking on (the default) or off.
// Off, as Open vSwitch's tcp_bypass_seq_chk, every segment counts as
// within the windows: none is invalid for its sequence or
// acknowledgement numbers (the state machine still runs).
func (t *Tracker) SetTCPSeqCheck(on bool) { t.seqOff.Store(!on) }

// TCPSeqCheck reports whether TCP sequence numbers are checked.
func (t *Tracker) TCPSeqCheck() bool { return !t.seqOff.Load() }

// Buckets returns the number of hash buckets of the table, fixed when
// the tracker was made (Entry.Bucket is one of them).
func (t *Tracker) Buckets() int { return len(t.tab.buckets) }
