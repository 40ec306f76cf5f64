//go:build !genl_stub

package genl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// fakeReq is a request the fake kernel received.
type fakeReq struct {
	Family  string
	Cmd     uint8
	Flags   netlink.HeaderFlags
	DPIndex int32
	// Attrs are the top-level attributes by type (the last one wins).
	Attrs map[uint16][]byte
}

func (r fakeReq) u32(t uint16) uint32 { return binary.NativeEndian.Uint32(r.Attrs[t]) }
func (r fakeReq) has(t uint16) bool   { _, ok := r.Attrs[t]; return ok }

// fakeMsg is one reply message: the generic netlink command and the
// payload after the genl header (ovs_header included).
type fakeMsg struct {
	Cmd   uint8
	Data  []byte
	Flags netlink.HeaderFlags // extra flags, e.g. DumpInterrupted
}

// kerr is an error reply, optionally with an extended ack.
type kerr struct {
	errno  unix.Errno
	msg    string
	offset uint32
}

func (e kerr) Error() string { return e.errno.Error() }

// fakeKernel answers generic netlink requests like the kernel's
// openvswitch module would, through a handler set by each test.
type fakeKernel struct {
	t         *testing.T
	mu        sync.Mutex
	noModule  bool
	noMeter   bool
	handle    func(r fakeReq) ([]fakeMsg, error)
	reqs      []fakeReq
	multicast [][]fakeMsg
	mcastDial bool // the next dial is a multicast socket
	// sends is how many messages each sendmsg on a request socket
	// carried.
	sends []int
	// packetMaxAttr is the ovs_packet family's CTRL_ATTR_MAXATTR; 0
	// means 12 (OVS_PACKET_ATTR_UPCALL_PID, as in current kernels).
	packetMaxAttr uint32
}

var fakeIDs = map[string]uint16{familyDatapath: 0x20, familyVport: 0x21, familyFlow: 0x22, familyPacket: 0x23, familyMeter: 0x24, familyCTLimit: 0x25}

func fakeName(id uint16) string {
	for n, i := range fakeIDs {
		if i == id {
			return n
		}
	}
	return ""
}

func newFake(t *testing.T, handle func(r fakeReq) ([]fakeMsg, error)) *fakeKernel {
	return &fakeKernel{t: t, handle: handle}
}

// client dials a client on the fake.
func (k *fakeKernel) client() *client {
	k.t.Helper()
	c, err := newClientWith(k.dial)
	if err != nil {
		k.t.Fatalf("newClientWith: %v", err)
	}
	k.t.Cleanup(func() { c.close() })
	return c
}

func (k *fakeKernel) dial() (*netlink.Conn, error) {
	k.mu.Lock()
	mc := k.mcastDial
	k.mcastDial = false
	k.mu.Unlock()
	if mc {
		return netlink.NewConn(&mcastSock{k: k}, 1), nil
	}
	return netlink.NewConn(&fakeSock{k: k}, 77), nil
}

// fakeSock is a netlink.Socket on the fake kernel that, like the kernel,
// delivers each reply message as a datagram of its own, except the parts
// of a dump, which come together.
type fakeSock struct {
	k     *fakeKernel
	queue [][]netlink.Message
}

func (s *fakeSock) Close() error { return nil }
func (s *fakeSock) Send(m netlink.Message) error {
	return s.SendMessages([]netlink.Message{m})
}
func (s *fakeSock) SendMessages(ms []netlink.Message) error {
	s.k.mu.Lock()
	s.k.sends = append(s.k.sends, len(ms))
	s.k.mu.Unlock()
	for _, m := range ms {
		out, err := s.k.serve([]netlink.Message{m})
		if err != nil {
			return err
		}
		if m.Header.Flags&netlink.Dump == netlink.Dump {
			s.queue = append(s.queue, out)
			continue
		}
		for _, o := range out {
			s.queue = append(s.queue, []netlink.Message{o})
		}
	}
	return nil
}
func (s *fakeSock) Receive() ([]netlink.Message, error) {
	var out []netlink.Message
	for m, err := range s.ReceiveIter() {
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
func (s *fakeSock) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		if len(s.queue) == 0 {
			return
		}
		d := s.queue[0]
		s.queue = s.queue[1:]
		for _, m := range d {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// requests returns the requests seen so far (family lookups excluded).
func (k *fakeKernel) requests() []fakeReq {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]fakeReq(nil), k.reqs...)
}

func encodeAttrs(t *testing.T, f func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	f(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withHeader prefixes attrs with a struct ovs_header.
func withHeader(idx int32, attrs []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(idx))
	return append(b, attrs...)
}

func (k *fakeKernel) serve(reqs []netlink.Message) ([]netlink.Message, error) {
	if len(reqs) == 0 {
		k.mu.Lock()
		defer k.mu.Unlock()
		if len(k.multicast) == 0 {
			return nil, io.EOF
		}
		ms := k.multicast[0]
		k.multicast = k.multicast[1:]
		var out []netlink.Message
		for _, m := range ms {
			out = append(out, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(fakeIDs[familyVport])}, Data: append([]byte{m.Cmd, 1, 0, 0}, m.Data...)})
		}
		return out, nil
	}
	req := reqs[0]
	var gm genetlink.Message
	if err := gm.UnmarshalBinary(req.Data); err != nil {
		return nil, err
	}
	if req.Header.Type == unix.GENL_ID_CTRL {
		return k.family(req, gm)
	}
	name := fakeName(uint16(req.Header.Type))
	if name == "" {
		return nil, fmt.Errorf("fake: request to unknown family %d", req.Header.Type)
	}
	fr := fakeReq{Family: name, Cmd: gm.Header.Command, Flags: req.Header.Flags, Attrs: map[uint16][]byte{}}
	if len(gm.Data) < 4 {
		return nil, fmt.Errorf("fake: request without ovs_header")
	}
	fr.DPIndex = int32(binary.NativeEndian.Uint32(gm.Data))
	ad, err := netlink.NewAttributeDecoder(gm.Data[4:])
	if err != nil {
		return nil, err
	}
	for ad.Next() {
		fr.Attrs[ad.Type()] = append([]byte(nil), ad.Bytes()...)
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.reqs = append(k.reqs, fr)
	k.mu.Unlock()
	msgs, herr := k.handle(fr)
	if herr != nil {
		ke, ok := herr.(kerr)
		if !ok {
			return nil, herr
		}
		return []netlink.Message{errorMessage(req, ke)}, nil
	}
	var out []netlink.Message
	dump := req.Header.Flags&netlink.Dump == netlink.Dump
	for _, m := range msgs {
		h := netlink.Header{Type: req.Header.Type, Sequence: req.Header.Sequence, PID: req.Header.PID, Flags: m.Flags}
		if dump {
			h.Flags |= netlink.Multi
		}
		out = append(out, netlink.Message{Header: h, Data: append([]byte{m.Cmd, 1, 0, 0}, m.Data...)})
	}
	if dump {
		out = append(out, netlink.Message{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi, Sequence: req.Header.Sequence, PID: req.Header.PID}, Data: make([]byte, 4)})
	} else if req.Header.Flags&netlink.Acknowledge != 0 {
		out = append(out, errorMessage(req, kerr{}))
	}
	return out, nil
}

// errorMessage builds an NLMSG_ERROR reply (errno 0 is an ack), with the
// request's header and an extended ack when e has a message.
func errorMessage(req netlink.Message, e kerr) netlink.Message {
	data := binary.NativeEndian.AppendUint32(nil, uint32(-int32(e.errno)))
	hdr := make([]byte, 16)
	binary.NativeEndian.PutUint32(hdr, 16)
	binary.NativeEndian.PutUint16(hdr[4:], uint16(req.Header.Type))
	binary.NativeEndian.PutUint32(hdr[8:], req.Header.Sequence)
	data = append(data, hdr...)
	flags := netlink.HeaderFlags(0x100) // NLM_F_CAPPED
	if e.msg != "" {
		ae := netlink.NewAttributeEncoder()
		ae.String(1, e.msg)
		if e.offset != 0 {
			ae.Uint32(2, e.offset)
		}
		b, _ := ae.Encode()
		data = append(data, b...)
		flags |= netlink.AcknowledgeTLVs
	}
	return netlink.Message{Header: netlink.Header{Type: netlink.Error, Flags: flags, Sequence: req.Header.Sequence, PID: req.Header.PID}, Data: data}
}

// family answers CTRL_CMD_GETFAMILY.
func (k *fakeKernel) family(req netlink.Message, gm genetlink.Message) ([]netlink.Message, error) {
	ad, err := netlink.NewAttributeDecoder(gm.Data)
	if err != nil {
		return nil, err
	}
	var name string
	for ad.Next() {
		if ad.Type() == unix.CTRL_ATTR_FAMILY_NAME {
			name = ad.String()
		}
	}
	id, ok := fakeIDs[name]
	if !ok || k.noModule || (k.noMeter && (name == familyMeter || name == familyCTLimit)) {
		return []netlink.Message{errorMessage(req, kerr{errno: unix.ENOENT})}, nil
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint16(unix.CTRL_ATTR_FAMILY_ID, id)
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, name)
	ae.Uint32(unix.CTRL_ATTR_VERSION, 1)
	maxAttr := uint32(12)
	if name == familyPacket && k.packetMaxAttr != 0 {
		maxAttr = k.packetMaxAttr
	}
	ae.Uint32(unix.CTRL_ATTR_MAXATTR, maxAttr)
	if name == familyVport {
		ae.Nested(unix.CTRL_ATTR_MCAST_GROUPS, func(ne *netlink.AttributeEncoder) error {
			ne.Nested(1, func(ge *netlink.AttributeEncoder) error {
				ge.Uint32(unix.CTRL_ATTR_MCAST_GRP_ID, 7)
				ge.String(unix.CTRL_ATTR_MCAST_GRP_NAME, groupVport)
				return nil
			})
			return nil
		})
	}
	b, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	return []netlink.Message{{
		Header: netlink.Header{Type: unix.GENL_ID_CTRL, Sequence: req.Header.Sequence, PID: req.Header.PID},
		Data:   append([]byte{unix.CTRL_CMD_NEWFAMILY, 2, 0, 0}, b...),
	}}, nil
}

// Reply builders, laid out as the kernel does.

func dpReply(t *testing.T, idx int32, name string, features uint32, extra func(ae *netlink.AttributeEncoder)) []byte {
	return withHeader(idx, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ae.String(dpAttrName, name)
		st := make([]byte, 32)
		for i := 0; i < 4; i++ {
			binary.NativeEndian.PutUint64(st[8*i:], uint64(10*(i+1)))
		}
		ae.Bytes(dpAttrStats, st)
		mf := make([]byte, 32)
		binary.NativeEndian.PutUint64(mf, 100)
		binary.NativeEndian.PutUint32(mf[8:], 3)
		binary.NativeEndian.PutUint64(mf[16:], 77)
		ae.Bytes(dpAttrMegaflowStats, mf)
		ae.Uint32(dpAttrUserFeatures, features)
		ae.Uint32(dpAttrMasksCacheSize, 256)
		if extra != nil {
			extra(ae)
		}
	}))
}

func vportReply(t *testing.T, dp int32, no uint32, typ VportType, name string, extra func(ae *netlink.AttributeEncoder)) []byte {
	return withHeader(dp, encodeAttrs(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(vportAttrPortNo, no)
		ae.Uint32(vportAttrType, uint32(typ))
		ae.String(vportAttrName, name)
		ae.Bytes(vportAttrUpcallPID, u32Bytes([]uint32{0}))
		st := make([]byte, 64)
		for i := 0; i < 8; i++ {
			binary.NativeEndian.PutUint64(st[8*i:], uint64(i+1))
		}
		ae.Bytes(vportAttrStats, st)
		ae.Uint32(vportAttrIfindex, 40+no)
		if extra != nil {
			extra(ae)
		}
	}))
}

// mcastSock is a netlink.Socket that delivers the fake's multicast
// messages and accepts group joins.
type mcastSock struct {
	k      *fakeKernel
	groups []uint32
}

func (s *mcastSock) Close() error                         { return nil }
func (s *mcastSock) Send(netlink.Message) error           { return errors.New("mcastSock: send") }
func (s *mcastSock) SendMessages([]netlink.Message) error { return errors.New("mcastSock: send") }
func (s *mcastSock) JoinGroup(g uint32) error             { s.groups = append(s.groups, g); return nil }
func (s *mcastSock) LeaveGroup(uint32) error              { return nil }
func (s *mcastSock) Receive() ([]netlink.Message, error) {
	if len(s.groups) == 0 {
		return nil, errors.New("mcastSock: no group joined")
	}
	ms, err := s.k.serve(nil)
	if err == io.EOF {
		return nil, errors.New("mcastSock: no more notifications")
	}
	return ms, err
}
func (s *mcastSock) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		ms, err := s.Receive()
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		for _, m := range ms {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// openOn opens datapath name on c as Open does on a client of its own:
// the Datapath closes c.
func openOn(c *client, name string) (*Datapath, error) {
	return datapathOn(c, func(c *client) (*DPInfo, error) { return c.getDatapath(name) })
}
