//go:build !genl_stub

package genl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// client is the Linux implementation behind Client and Datapath: it
// talks to the kernel's Open vSwitch generic netlink families, resolves
// every family once, when it is created, and has one method per kernel
// command. It is safe for concurrent use; dumps and upcall sockets use
// sockets of their own, so a dump's callback may use the client.
type client struct {
	dial  func() (*netlink.Conn, error)
	mu    sync.Mutex // serializes requests on conn
	conn  *netlink.Conn
	gconn *genetlink.Conn

	dp, vport, flow, packet genetlink.Family
	meter, ctLimit          *genetlink.Family // nil when the kernel lacks them
	vportGroup              uint32            // 0 when missing
	// packetMaxAttr is the highest attribute the kernel's ovs_packet
	// family knows (CTRL_ATTR_MAXATTR): newer attributes would be
	// ignored, not refused.
	packetMaxAttr uint16

	// putFlows' scratch, reused batch after batch under mu: the
	// requests' encodings, their bounds, their messages and their
	// indexes in the caller's slice.
	putBuf  []byte
	putEnds [][2]int
	putMsgs []netlink.Message
	putIdx  []int
	// executeBatch's encodings (it shares the bounds, messages and
	// indexes).
	execBuf []byte
	// sendBatch's answered marks, one a message of the batch.
	pending []bool

	// raw is conn's file descriptor (nil for a socket without one, a
	// test fake): sendEncoded writes a batch through it as encoded,
	// numbering its requests from seq, with pid in their headers.
	raw      syscall.RawConn
	pid, seq uint32
	// write writes wbuf on the descriptor, leaving wn and werr (one
	// function for the client's life: a write allocates nothing).
	write func(fd uintptr) bool
	wbuf  []byte
	wn    int
	werr  error
}

// newClient opens a generic netlink socket and resolves the Open vSwitch
// families.
func newClient() (*client, error) {
	return newClientWith(dialGeneric)
}

// recvBufferSize is the size of a generic netlink socket's receive buffer.
const recvBufferSize = 256 << 10

// dialGeneric opens a NETLINK_GENERIC socket with extended
// acknowledgements when the kernel has them.
func dialGeneric() (*netlink.Conn, error) {
	// A fixed receive buffer saves the MSG_PEEK|MSG_TRUNC recvmsg that
	// netlink.Conn otherwise makes before every datagram to size it (two
	// system calls per datagram, the larger cost of a flow dump). It must
	// hold the largest datagram the kernel sends us: dump datagrams are
	// at most 32 KiB, a flow or upcall message (64 KiB packet, 32 KiB of
	// actions, key, mask) and an error echoing a request stay well below
	// this.
	c, err := netlink.Dial(unix.NETLINK_GENERIC, &netlink.Config{MessageBufferSize: recvBufferSize})
	if err != nil {
		return nil, wrapErr("dial generic netlink", err)
	}
	// Extended acks give the kernel's reason for a rejection; kernels
	// without them still work.
	_ = c.SetOption(netlink.ExtendedAcknowledge, true)
	return c, nil
}

// newClientWith creates a client whose sockets come from dial: the first
// for requests, further ones for dumps, upcalls and notifications. Tests
// give it fake sockets.
func newClientWith(dial func() (*netlink.Conn, error)) (*client, error) {
	conn, err := dial()
	if err != nil {
		return nil, err
	}
	c := &client{dial: dial, conn: conn, gconn: genetlink.NewConn(conn)}
	c.initRaw()
	if err := c.resolve(); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// initRaw sets up sendEncoded's writes on c.conn's descriptor, when it
// has one. Its requests are numbered from a random start of their own,
// as netlink.Conn numbers the others: answers are told apart by number,
// and two random starts of 32 bits meet only by a very long chance.
func (c *client) initRaw() {
	rc, err := c.conn.SyscallConn()
	if err != nil {
		return
	}
	c.raw, c.pid, c.seq = rc, c.conn.PID(), rand.Uint32()
	c.write = func(fd uintptr) bool {
		c.wn, c.werr = unix.Write(int(fd), c.wbuf)
		return c.werr != unix.EAGAIN
	}
}

// resolve looks up the families.
func (c *client) resolve() error {
	get := func(name string) (genetlink.Family, error) {
		f, err := c.gconn.GetFamily(name)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return f, fmt.Errorf("genl: generic netlink family %q: %w (%w)", name, ErrModuleNotLoaded, wrapErr("resolve family "+name, err))
			}
			return f, wrapErr("resolve family "+name, err)
		}
		return f, nil
	}
	var err error
	for _, p := range []struct {
		name string
		f    *genetlink.Family
	}{{familyDatapath, &c.dp}, {familyVport, &c.vport}, {familyFlow, &c.flow}, {familyPacket, &c.packet}} {
		if *p.f, err = get(p.name); err != nil {
			return err
		}
	}
	for _, g := range c.vport.Groups {
		if g.Name == groupVport {
			c.vportGroup = g.ID
		}
	}
	if c.packetMaxAttr, err = c.familyMaxAttr(familyPacket); err != nil {
		return err
	}
	// Meters (4.15) and conntrack limits (4.18) are optional.
	if f, err := c.gconn.GetFamily(familyMeter); err == nil {
		c.meter = &f
	} else if !errors.Is(err, unix.ENOENT) {
		return wrapErr("resolve family "+familyMeter, err)
	}
	if f, err := c.gconn.GetFamily(familyCTLimit); err == nil {
		c.ctLimit = &f
	} else if !errors.Is(err, unix.ENOENT) {
		return wrapErr("resolve family "+familyCTLimit, err)
	}
	return nil
}

// familyMaxAttr asks the generic netlink controller for the highest
// attribute type a family knows (genetlink.Family does not keep it).
func (c *client) familyMaxAttr(name string) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, name)
	b, err := ae.Encode()
	if err != nil {
		return 0, fmt.Errorf("genl: family %s: %w", name, err)
	}
	msgs, err := c.gconn.Execute(genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_GETFAMILY, Version: 1}, Data: b},
		unix.GENL_ID_CTRL, netlink.Request)
	if err != nil {
		return 0, wrapErr("resolve family "+name, err)
	}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return 0, malformed("family "+name, "CTRL_ATTR_MAXATTR", err)
		}
		for ad.Next() {
			if ad.Type() == unix.CTRL_ATTR_MAXATTR {
				v := ad.Uint32()
				if v > 0xffff {
					return 0, malformed("family "+name, "CTRL_ATTR_MAXATTR", fmt.Errorf("maxattr %d out of range", v))
				}
				return uint16(v), nil
			}
		}
		if err := ad.Err(); err != nil {
			return 0, malformed("family "+name, "CTRL_ATTR_MAXATTR", err)
		}
	}
	return 0, malformed("family "+name, "CTRL_ATTR_MAXATTR", errors.New("the controller's reply has no CTRL_ATTR_MAXATTR"))
}

// close closes the client's request socket.
func (c *client) close() error { return c.conn.Close() }

// request is one generic netlink command.
type request struct {
	op      string        // for errors: "ovs_flow new"
	opFn    func() string // computes op only when an error needs it
	family  uint16
	cmd     uint8
	version uint8
	flags   netlink.HeaderFlags
	data    []byte
}

// name is the request's name for errors.
func (r *request) name() string {
	if r.opFn != nil {
		return r.opFn()
	}
	return r.op
}

// do sends r on the client's request socket and calls fn for every reply message
// (the generic netlink payload and command). Non-dump requests ask for an
// acknowledgement, so the end of the reply is always known.
func (c *client) do(r request, fn func(cmd uint8, data []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := exchange(c.conn, r, fn)
	return err
}

// exchange sends r on conn and reads replies until the acknowledgement
// (or the end of a dump). Replies to other sequence numbers (left over
// from an earlier, abandoned request) are skipped. It reports whether any
// reply carried NLM_F_DUMP_INTR. If fn fails, the rest of the replies is
// read and dropped and fn's error returned.
func exchange(conn *netlink.Conn, r request, fn func(cmd uint8, data []byte) error) (interrupted bool, err error) {
	dump := r.flags&netlink.Dump == netlink.Dump
	flags := netlink.Request | r.flags
	if !dump {
		flags |= netlink.Acknowledge
	}
	gm := genetlink.Message{Header: genetlink.Header{Command: r.cmd, Version: r.version}, Data: r.data}
	b, err := gm.MarshalBinary()
	if err != nil {
		return false, wrapErr(r.name(), err)
	}
	req, err := conn.Send(netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(r.family), Flags: flags}, Data: b})
	if err != nil {
		return false, wrapErr(r.name(), err)
	}
	debugMessage("request", r.name(), r.family, r.cmd, uint16(flags), req.Header.Sequence, r.data)
	var fnErr error
	for {
		n, ours, done := 0, false, false
		for m, err := range conn.ReceiveIter() {
			n++
			if err != nil {
				var oe *netlink.OpError
				if errors.As(err, &oe) && oe.Sequence != 0 && oe.Sequence != req.Header.Sequence {
					// An error for an earlier request; ours is still coming.
					continue
				}
				debugMessage("error", r.name()+": "+err.Error(), r.family, r.cmd, 0, req.Header.Sequence, nil)
				return interrupted, wrapErr(r.name(), err)
			}
			if m.Header.Sequence != req.Header.Sequence {
				continue
			}
			if debugLog.Load() != nil {
				debugMessage("reply", r.name(), uint16(m.Header.Type), replyCmd(m.Data), uint16(m.Header.Flags), m.Header.Sequence, m.Data)
			}
			ours = true
			if m.Header.Flags&netlink.DumpInterrupted != 0 {
				interrupted = true
			}
			switch m.Header.Type {
			case netlink.Error: // the acknowledgement (errors were returned above)
				done = true
				continue
			case netlink.Done:
				done = true
				continue
			}
			if fnErr != nil {
				continue
			}
			if len(m.Data) < 4 {
				fnErr = malformed(r.name()+" reply", "", fmt.Errorf("%d bytes, too short for a generic netlink header", len(m.Data)))
				continue
			}
			fnErr = fn(m.Data[0], m.Data[4:])
			if dump && fnErr != nil {
				// Abandon the dump: the socket is the dump's own and is
				// closed by the caller.
				return interrupted, fnErr
			}
		}
		// netlink.Conn reads a multi-part reply up to its NLMSG_DONE,
		// which it does not pass on: one pass ends a dump, and a pass with
		// nothing at all is an empty dump.
		if done || (dump && (ours || n == 0)) {
			break
		}
		if n == 0 {
			return interrupted, wrapErr(r.name(), errors.New("the socket returned no reply"))
		}
	}
	return interrupted, fnErr
}

// dumpOn runs a dump request on a socket of its own, so that fn may use
// the client.
func (c *client) dumpOn(r request, fn func(cmd uint8, data []byte) error) (bool, error) {
	conn, err := c.dial()
	if err != nil {
		return false, err
	}
	defer conn.Close()
	r.flags |= netlink.Dump
	return exchange(conn, r, fn)
}

// collectDump runs a small dump (datapaths, vports) into memory,
// restarting it when the kernel reports NLM_F_DUMP_INTR.
func (c *client) collectDump(r request, reset func(), fn func(cmd uint8, data []byte) error) error {
	const tries = 5
	for i := 0; i < tries; i++ {
		reset()
		c.mu.Lock()
		r.flags |= netlink.Dump
		intr, err := exchange(c.conn, r, fn)
		c.mu.Unlock()
		if err != nil {
			return err
		}
		if !intr {
			return nil
		}
	}
	return fmt.Errorf("genl: %s: %w %d times in a row", r.name(), ErrDumpInterrupted, tries)
}

// ovsHeader returns a struct ovs_header followed by attrs.
func ovsHeader(dpIndex int32, ae *netlink.AttributeEncoder) ([]byte, error) {
	var attrs []byte
	if ae != nil {
		var err error
		if attrs, err = ae.Encode(); err != nil {
			return nil, err
		}
	}
	b := make([]byte, ovsHeaderLen, ovsHeaderLen+len(attrs))
	putU32(b, uint32(dpIndex))
	return append(b, attrs...), nil
}

// single expects exactly one reply message and decodes it with dec.
func single[T any](c *client, r request, dec func([]byte) (T, error)) (T, error) {
	var (
		out T
		got bool
	)
	err := c.do(r, func(_ uint8, data []byte) error {
		if got {
			return nil
		}
		v, err := dec(data)
		if err != nil {
			return fmt.Errorf("genl: %s: %w", r.name(), err)
		}
		out, got = v, true
		return nil
	})
	if err == nil && !got {
		err = fmt.Errorf("genl: %s: the kernel acknowledged without a reply message", r.name())
	}
	return out, err
}

// families returns the Open vSwitch generic netlink families the kernel
// has, by name, with the version each reports.
func (c *client) families() map[string]uint8 {
	m := map[string]uint8{
		familyDatapath: c.dp.Version, familyVport: c.vport.Version,
		familyFlow: c.flow.Version, familyPacket: c.packet.Version,
	}
	if c.meter != nil {
		m[familyMeter] = c.meter.Version
	}
	if c.ctLimit != nil {
		m[familyCTLimit] = c.ctLimit.Version
	}
	return m
}
