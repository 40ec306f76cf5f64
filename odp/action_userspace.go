package odp

import (
	"encoding/binary"
	"fmt"
)

// OVS_USERSPACE_ATTR_* types.
const (
	userspaceAttrPID           = 1
	userspaceAttrUserdata      = 2
	userspaceAttrEgressTunPort = 3
	userspaceAttrActions       = 4
)

var userspaceAttrNames = map[uint16]string{
	userspaceAttrPID:           "pid",
	userspaceAttrUserdata:      "userdata",
	userspaceAttrEgressTunPort: "egress_tun_port",
	userspaceAttrActions:       "actions",
}

// Userspace sends the packet to userspace as an OVS_PACKET_CMD_ACTION
// upcall (OVS_ACTION_ATTR_USERSPACE, nested OVS_USERSPACE_ATTR_*).
//
// Text: "userspace(pid=N[,COOKIE][,actions][,tunnel_out_port=P])" where
// COOKIE is "userdata(HEX)", or one of Open vSwitch's cookie forms
// (sFlow(...), slow_path(...), flow_sample(...), ipfix(...),
// controller(...)) when Userdata is one of its 48-byte cookies (see
// UserActionCookie). Like Open vSwitch, the parser pads userdata to at
// least 8 bytes with zeros (kernels before 3.10 required 8).
type Userspace struct {
	// PID is the netlink port ID that receives the upcall.
	PID uint32
	// Userdata is passed back in the upcall (OVS_PACKET_ATTR_USERDATA);
	// nil means no OVS_USERSPACE_ATTR_USERDATA attribute.
	Userdata []byte
	// EgressTunPort, when HasEgressTunPort, is the tunnel output port
	// whose tunnel info the upcall carries.
	EgressTunPort    uint32
	HasEgressTunPort bool
	// Actions asks the kernel to include the flow's actions in the upcall
	// (OVS_USERSPACE_ATTR_ACTIONS flag).
	Actions bool
}

// ActionType implements Action.
func (Userspace) ActionType() ActionType { return ActionUserspace }

func (u Userspace) appendPayload(b []byte) ([]byte, error) {
	start := len(b)
	b = appendU32(b, userspaceAttrPID, u.PID)
	if u.Userdata != nil {
		if len(u.Userdata) > maxAttrLen {
			return b, fmt.Errorf("userdata of %d bytes exceeds the netlink attribute limit", len(u.Userdata))
		}
		b = appendAttr(b, userspaceAttrUserdata, u.Userdata)
	}
	if u.HasEgressTunPort {
		b = appendU32(b, userspaceAttrEgressTunPort, u.EgressTunPort)
	}
	if u.Actions {
		b = appendAttrHeader(b, userspaceAttrActions, 0)
	}
	if n := len(b) - start + nlaHdrLen; n > 0xffff {
		return b, fmt.Errorf("userspace action of %d bytes exceeds the netlink attribute limit of 65535 (userdata of %d bytes is too long)", n, len(u.Userdata))
	}
	return b, nil
}

func (u Userspace) format(f *textBuf) {
	fmt.Fprintf(f, "userspace(pid=%d", u.PID)
	if u.Userdata != nil {
		if c, ok := ParseUserActionCookie(u.Userdata); ok {
			f.WriteByte(',')
			c.format(f)
		} else {
			f.WriteString(",userdata(")
			writeHex(f, u.Userdata)
			f.WriteByte(')')
		}
	}
	if u.Actions {
		f.WriteString(",actions")
	}
	if u.HasEgressTunPort {
		f.WriteString(",tunnel_out_port=")
		f.writePort(u.EgressTunPort)
	}
	f.WriteByte(')')
}

func decodeUserspace(a *rawAttr, path string, _ int) (Action, error) {
	var u Userspace
	havePID := false
	err := actNested(a, path, userspaceAttrNames, func(n *rawAttr, p string) error {
		var err error
		switch n.Type {
		case userspaceAttrPID:
			u.PID, err = actU32(n, p)
			havePID = true
		case userspaceAttrUserdata:
			u.Userdata = append([]byte{}, n.Data...)
		case userspaceAttrEgressTunPort:
			u.EgressTunPort, err = actU32(n, p)
			u.HasEgressTunPort = true
		case userspaceAttrActions:
			err = actFlag(n, p)
			u.Actions = true
		default:
			err = actDecodeErr(n, p, "unknown userspace attribute %d", n.Type)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !havePID {
		return nil, actDecodeErr(a, path, "missing pid (OVS_USERSPACE_ATTR_PID)")
	}
	return u, nil
}

func parseUserspace(sc *scanner, _ int) (Action, error) {
	var u Userspace
	if err := sc.actExpect("(pid=", "userspace"); err != nil {
		return nil, err
	}
	v, err := sc.actUint(32, "pid")
	if err != nil {
		return nil, err
	}
	u.PID = uint32(v)
	// Cookie, then actions, then tunnel_out_port, each optional, in this
	// order (as Open vSwitch's parser wants them).
	if sc.accept(",userdata(") {
		start := sc.pos
		d, err := sc.hexBytes("userdata")
		if err != nil {
			return nil, err
		}
		if err := sc.actExpect(")", "userdata"); err != nil {
			return nil, err
		}
		if len(d) > maxAttrLen {
			return nil, sc.errorAt(start, "userdata of %d bytes exceeds the netlink attribute limit", len(d))
		}
		for len(d) < 8 {
			d = append(d, 0)
		}
		u.Userdata = d
	} else if c, ok, err := parseUserActionCookie(sc); err != nil {
		return nil, err
	} else if ok {
		u.Userdata = c.Marshal()
	}
	if sc.accept(",actions") {
		u.Actions = true
	}
	if sc.accept(",tunnel_out_port=") {
		v, err := sc.actUint(32, "tunnel_out_port")
		if err != nil {
			return nil, err
		}
		u.EgressTunPort, u.HasEgressTunPort = uint32(v), true
	}
	if err := sc.actExpect(")", "userspace (fields go in the order pid, cookie, actions, tunnel_out_port)"); err != nil {
		return nil, err
	}
	return u, nil
}

func init() {
	actionDecoders[ActionUserspace] = decodeUserspace
	actionParsers["userspace"] = parseUserspace
}

// Open vSwitch's user action cookie (lib/odp-util.h, struct
// user_action_cookie): 48 bytes in host byte order except where noted.
//
//	0  u16 type          4  u32 ofp_in_port   8  16-byte ofproto UUID
//	24 union:
//	   sFlow:       24 be16 vlan_tci, 28 u32 output
//	   slow_path:   28 u32 reason
//	   flow_sample: 24 u16 probability, 28 u32 collector_set_id,
//	                32 u32 obs_domain_id, 36 u32 obs_point_id,
//	                40 u32 output_odp_port, 44 u32 direction
//	   ipfix:       24 u32 output_odp_port
//	   controller:  24 u8 dont_send, 25 u8 continuation, 26 u16 reason,
//	                28 u32 recirc_id, 32 be64 rule_cookie,
//	                40 u16 controller_id, 42 u16 max_len
const userActionCookieLen = 48

// Cookie types (enum user_action_cookie_type).
const (
	CookieSFlow      uint16 = 1
	CookieSlowPath   uint16 = 2
	CookieFlowSample uint16 = 3
	CookieIPFIX      uint16 = 4
	CookieController uint16 = 5
)

// ofppNone is OpenFlow's OFPP_NONE, the in_port Open vSwitch's parser
// puts in cookies.
const ofppNone = 0xffff

// UserActionCookie is Open vSwitch's userspace action cookie, which
// ovs-vswitchd puts in the userdata of the userspace actions it installs.
// Only the fields of Type's variant are meaningful.
type UserActionCookie struct {
	// Type is one of the Cookie* constants.
	Type uint16
	// OFPInPort is the OpenFlow in_port (OFPP_NONE, 0xffff, from the parser).
	OFPInPort uint32
	// OfprotoUUID identifies the bridge (zero from the parser).
	OfprotoUUID [16]byte

	// VLANTCI and Output are the sFlow cookie's fields.
	VLANTCI uint16
	Output  uint32
	// Reason is the slow_path cookie's bit set of slow-path reasons
	// (cfm=1, bfd=2, lacp=4, stp=8, lldp=16, action=32, match=64), or the
	// controller cookie's packet-in reason.
	Reason uint32
	// Probability, CollectorSetID, ObsDomainID, ObsPointID, OutputPort and
	// Direction (0 default, 1 ingress, 2 egress) are the flow_sample
	// cookie's fields; OutputPort is also the ipfix cookie's.
	Probability    uint16
	CollectorSetID uint32
	ObsDomainID    uint32
	ObsPointID     uint32
	OutputPort     uint32
	Direction      uint32
	// DontSend, Continuation, RecircID, RuleCookie, ControllerID and
	// MaxLen are the controller cookie's fields (with Reason).
	DontSend     uint8
	Continuation uint8
	RecircID     uint32
	RuleCookie   uint64
	ControllerID uint16
	MaxLen       uint16
}

// ParseUserActionCookie interprets userdata as one of Open vSwitch's
// cookies. It reports false when the length is not 48 or the type is not
// one Open vSwitch formats specially.
func ParseUserActionCookie(d []byte) (UserActionCookie, bool) {
	var c UserActionCookie
	if len(d) != userActionCookieLen {
		return c, false
	}
	ne := binary.NativeEndian
	c.Type = ne.Uint16(d)
	c.OFPInPort = ne.Uint32(d[4:])
	copy(c.OfprotoUUID[:], d[8:24])
	switch c.Type {
	case CookieSFlow:
		c.VLANTCI = binary.BigEndian.Uint16(d[24:])
		c.Output = ne.Uint32(d[28:])
	case CookieSlowPath:
		c.Reason = ne.Uint32(d[28:])
	case CookieFlowSample:
		c.Probability = ne.Uint16(d[24:])
		c.CollectorSetID = ne.Uint32(d[28:])
		c.ObsDomainID = ne.Uint32(d[32:])
		c.ObsPointID = ne.Uint32(d[36:])
		c.OutputPort = ne.Uint32(d[40:])
		c.Direction = ne.Uint32(d[44:])
	case CookieIPFIX:
		c.OutputPort = ne.Uint32(d[24:])
	case CookieController:
		c.DontSend = d[24]
		c.Continuation = d[25]
		c.Reason = uint32(ne.Uint16(d[26:]))
		c.RecircID = ne.Uint32(d[28:])
		c.RuleCookie = binary.BigEndian.Uint64(d[32:])
		c.ControllerID = ne.Uint16(d[40:])
		c.MaxLen = ne.Uint16(d[42:])
	default:
		return c, false
	}
	return c, true
}

// Marshal returns the cookie's 48 bytes.
func (c UserActionCookie) Marshal() []byte {
	d := make([]byte, userActionCookieLen)
	ne := binary.NativeEndian
	ne.PutUint16(d, c.Type)
	ne.PutUint32(d[4:], c.OFPInPort)
	copy(d[8:24], c.OfprotoUUID[:])
	switch c.Type {
	case CookieSFlow:
		binary.BigEndian.PutUint16(d[24:], c.VLANTCI)
		ne.PutUint32(d[28:], c.Output)
	case CookieSlowPath:
		ne.PutUint32(d[28:], c.Reason)
	case CookieFlowSample:
		ne.PutUint16(d[24:], c.Probability)
		ne.PutUint32(d[28:], c.CollectorSetID)
		ne.PutUint32(d[32:], c.ObsDomainID)
		ne.PutUint32(d[36:], c.ObsPointID)
		ne.PutUint32(d[40:], c.OutputPort)
		ne.PutUint32(d[44:], c.Direction)
	case CookieIPFIX:
		ne.PutUint32(d[24:], c.OutputPort)
	case CookieController:
		d[24] = c.DontSend
		d[25] = c.Continuation
		ne.PutUint16(d[26:], uint16(c.Reason))
		ne.PutUint32(d[28:], c.RecircID)
		binary.BigEndian.PutUint64(d[32:], c.RuleCookie)
		ne.PutUint16(d[40:], c.ControllerID)
		ne.PutUint16(d[42:], c.MaxLen)
	}
	return d
}

// slowPathReasons are the slow-path reason bit names, bit 0 first.
var slowPathReasons = []string{"cfm", "bfd", "lacp", "stp", "lldp", "action", "match"}

func (c UserActionCookie) format(f *textBuf) {
	switch c.Type {
	case CookieSFlow:
		fmt.Fprintf(f, "sFlow(vid=%d,pcp=%d,output=%d)", c.VLANTCI&vlanVIDMask, c.VLANTCI>>vlanPCPShift, c.Output)
	case CookieSlowPath:
		f.WriteString("slow_path(")
		if c.Reason == 0 {
			f.WriteByte('0')
		}
		bad := uint32(0)
		first := true
		for bit := 0; bit < 32; bit++ {
			if c.Reason&(1<<bit) == 0 {
				continue
			}
			if bit >= len(slowPathReasons) {
				bad |= 1 << bit
				continue
			}
			if !first {
				f.WriteByte(',')
			}
			first = false
			f.WriteString(slowPathReasons[bit])
		}
		if bad != 0 {
			if !first {
				f.WriteByte(',')
			}
			fmt.Fprintf(f, "0x%x", bad)
		}
		f.WriteByte(')')
	case CookieFlowSample:
		fmt.Fprintf(f, "flow_sample(probability=%d,collector_set_id=%d,obs_domain_id=%d,obs_point_id=%d,output_port=%d",
			c.Probability, c.CollectorSetID, c.ObsDomainID, c.ObsPointID, c.OutputPort)
		switch c.Direction {
		case 1:
			f.WriteString(",ingress")
		case 2:
			f.WriteString(",egress")
		}
		f.WriteByte(')')
	case CookieIPFIX:
		fmt.Fprintf(f, "ipfix(output_port=%d)", c.OutputPort)
	case CookieController:
		fmt.Fprintf(f, "controller(reason=%d,dont_send=%d,continuation=%d,recirc_id=%d,rule_cookie=%s,controller_id=%d,max_len=%d)",
			uint16(c.Reason), b2i(c.DontSend != 0), b2i(c.Continuation != 0), c.RecircID, cAltHex(c.RuleCookie), c.ControllerID, c.MaxLen)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseUserActionCookie parses ",sFlow(...)" and the other cookie forms.
// It reports false (consuming nothing) when none is there.
func parseUserActionCookie(sc *scanner) (UserActionCookie, bool, error) {
	c := UserActionCookie{OFPInPort: ofppNone}
	save := sc.pos
	if !sc.accept(",") {
		return c, false, nil
	}
	nameAt := sc.pos
	name := sc.ident()
	if !sc.accept("(") {
		sc.pos = save
		return c, false, nil
	}
	num := func(bits int, what string) (uint64, error) { return sc.actUint(bits, what) }
	type field struct {
		name string
		bits int
		dst  func(uint64)
	}
	seq := func(ctx string, fs []field) error {
		for i, fd := range fs {
			if i > 0 {
				if err := sc.actExpect(",", ctx); err != nil {
					return err
				}
			}
			if err := sc.actExpect(fd.name+"=", ctx); err != nil {
				return err
			}
			v, err := num(fd.bits, fd.name)
			if err != nil {
				return err
			}
			fd.dst(v)
		}
		return nil
	}
	var err error
	switch name {
	case "sFlow":
		c.Type = CookieSFlow
		var vid, pcp uint64
		err = seq("sFlow", []field{
			{"vid", 12, func(v uint64) { vid = v }},
			{"pcp", 3, func(v uint64) { pcp = v }},
			{"output", 32, func(v uint64) { c.Output = uint32(v) }},
		})
		tci := uint16(vid) | uint16(pcp)<<vlanPCPShift
		if tci != 0 {
			tci |= vlanCFI
		}
		c.VLANTCI = tci
	case "slow_path":
		c.Type = CookieSlowPath
		err = parseSlowPathReasons(sc, &c.Reason)
		if err != nil {
			return c, false, err
		}
		return c, true, nil
	case "flow_sample":
		c.Type = CookieFlowSample
		err = seq("flow_sample", []field{
			{"probability", 16, func(v uint64) { c.Probability = uint16(v) }},
			{"collector_set_id", 32, func(v uint64) { c.CollectorSetID = uint32(v) }},
			{"obs_domain_id", 32, func(v uint64) { c.ObsDomainID = uint32(v) }},
			{"obs_point_id", 32, func(v uint64) { c.ObsPointID = uint32(v) }},
			{"output_port", 32, func(v uint64) { c.OutputPort = uint32(v) }},
		})
		if err == nil {
			if sc.accept(",ingress") {
				c.Direction = 1
			} else if sc.accept(",egress") {
				c.Direction = 2
			}
		}
	case "ipfix":
		c.Type = CookieIPFIX
		err = seq("ipfix", []field{{"output_port", 32, func(v uint64) { c.OutputPort = uint32(v) }}})
	case "controller":
		c.Type = CookieController
		var rc uint64
		err = seq("controller", []field{
			{"reason", 16, func(v uint64) { c.Reason = uint32(v) }},
			{"dont_send", 8, func(v uint64) { c.DontSend = b2u8(v != 0) }},
			{"continuation", 8, func(v uint64) { c.Continuation = b2u8(v != 0) }},
			{"recirc_id", 32, func(v uint64) { c.RecircID = uint32(v) }},
		})
		if err == nil {
			if err = sc.actExpect(",rule_cookie=", "controller"); err == nil {
				rc, err = sc.actUintBase(64, 16, "rule_cookie")
				c.RuleCookie = rc
			}
		}
		if err == nil {
			err = sc.actExpect(",", "controller")
		}
		if err == nil {
			err = seq("controller", []field{
				{"controller_id", 16, func(v uint64) { c.ControllerID = uint16(v) }},
				{"max_len", 16, func(v uint64) { c.MaxLen = uint16(v) }},
			})
		}
	default:
		return c, false, sc.errorAt(nameAt, "unknown userspace cookie %q (want userdata, sFlow, slow_path, flow_sample, ipfix or controller)", name)
	}
	if err != nil {
		return c, false, err
	}
	if err := sc.actExpect(")", name); err != nil {
		return c, false, err
	}
	return c, true, nil
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// parseSlowPathReasons parses the reasons of "slow_path(...)" through the
// closing parenthesis: names or numbers separated by ',' (as Open vSwitch
// prints them) or '|' (as its parser wants them).
func parseSlowPathReasons(sc *scanner, out *uint32) error {
	var r uint32
	for {
		if sc.accept(")") {
			*out = r
			return nil
		}
		start := sc.pos
		if c := sc.peek(); c >= '0' && c <= '9' {
			v, err := sc.actUint(32, "slow_path reason")
			if err != nil {
				return err
			}
			r |= uint32(v)
		} else {
			name := sc.ident()
			found := false
			for i, n := range slowPathReasons {
				if n == name {
					r |= 1 << i
					found = true
				}
			}
			if !found {
				return sc.errorAt(start, "unknown slow_path reason %q", name)
			}
		}
		if sc.accept(",") || sc.accept("|") {
			continue
		}
		if sc.peek() != ')' {
			return sc.errorf("expected ',' or ')' in slow_path")
		}
	}
}
