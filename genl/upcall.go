package genl

import (
	"context"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// UpcallSocket is one handler's upcall socket, from Datapath.Upcalls: a
// netlink socket whose PID is registered with the datapath (per CPU or
// per vport), from which the kernel's MISS and ACTION upcalls are read.
// It implements odp.UpcallReceiver. Methods other than PID, Lost,
// Malformed and Close must not be called concurrently.
type UpcallSocket struct{ s upcallSocket }

var _ odp.UpcallReceiver = (*UpcallSocket)(nil)

// PID is the socket's netlink port ID, which the kernel sends upcalls to.
func (u *UpcallSocket) PID() uint32 { return u.s.getPID() }

// Lost counts the upcalls lost because the socket's buffer overflowed
// (ENOBUFS): the kernel drops them and reports how many only as an error,
// so each ENOBUFS counts one (at least one upcall was lost).
func (u *UpcallSocket) Lost() uint64 { return u.s.lostCount() }

// Backlog reports how full the socket's receive queue is: the bytes the
// kernel holds for it (queued upcalls, counted as the kernel charges
// them) and the most it holds before it drops upcalls (ENOBUFS), read
// with SO_MEMINFO. The daemon sheds load from this, not from how long a
// batch took. It does not allocate.
func (u *UpcallSocket) Backlog() (queued, capacity int, err error) { return u.s.backlog() }

// Malformed counts datagrams that were not valid upcalls and were skipped.
func (u *UpcallSocket) Malformed() uint64 { return u.s.malformedCount() }

// Close closes the socket; a blocked read returns.
func (u *UpcallSocket) Close() error { return u.s.close() }

// ReadRaw blocks until a datagram arrives, then calls fn for every upcall
// in it. The RawUpcall and the slices in it are only valid during the
// call. It returns how many upcalls it passed to fn. A full socket buffer
// (ENOBUFS) is counted in Lost and reading goes on. ReadRaw does not
// allocate. It fails with os.ErrDeadlineExceeded after SetReadDeadline,
// and with net.ErrClosed (wrapped) after Close.
func (u *UpcallSocket) ReadRaw(fn func(*RawUpcall)) (int, error) { return u.s.readRaw(fn) }

// SetReadDeadline sets a deadline for ReadRaw and Recv.
func (u *UpcallSocket) SetReadDeadline(t time.Time) error { return u.s.setReadDeadline(t) }

// Recv implements odp.UpcallReceiver: it blocks until at least one upcall
// arrives (or ctx is done), then fills ups with it and with whatever else
// is already queued, up to len(ups). Each Upcall owns its data.
func (u *UpcallSocket) Recv(ctx context.Context, ups []odp.Upcall) (int, error) {
	return u.s.recv(ctx, ups)
}
