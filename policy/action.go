package policy

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// ActionType is the kind of a policy action.
type ActionType uint8

// The policy actions, as the rule syntax names them.
const (
	// ActOutput sends the packet to datapath port Action.Port
	// ("output:N" or "N"). Output to the input port is skipped, as in
	// OpenFlow.
	ActOutput ActionType = iota + 1
	// ActNormal does what the L2 learning switch would ("normal").
	ActNormal
	// ActFlood sends the packet to every port but the input port
	// ("flood").
	ActFlood
	// ActAll is the same as ActFlood here: there are no ports excluded
	// from flooding ("all").
	ActAll
	// ActController sends the packet to userspace with Action.Userdata
	// ("controller" or "controller(userdata=HEX)").
	ActController
	// ActSetVLAN sets the outer VLAN ID to Action.Arg, keeping PCP and
	// TPID, or pushes an 802.1Q tag with PCP 0 when there is none
	// ("mod_vlan_vid:N").
	ActSetVLAN
	// ActStripVLAN removes the outer VLAN tag if there is one
	// ("strip_vlan").
	ActStripVLAN
	// ActSetDlSrc and ActSetDlDst set an Ethernet address to Action.MAC
	// ("mod_dl_src:MAC", "mod_dl_dst:MAC").
	ActSetDlSrc
	ActSetDlDst
	// ActSetNwSrc and ActSetNwDst set an IPv4 address to Action.IP, on
	// IPv4 packets only ("mod_nw_src:IP", "mod_nw_dst:IP").
	ActSetNwSrc
	ActSetNwDst
	// ActSetNwTOS sets the DSCP bits of the IPv4 TOS or IPv6 traffic
	// class to Action.Arg, a multiple of 4 ("mod_nw_tos:N").
	ActSetNwTOS
	// ActSetNwTTL sets the IPv4 TTL or IPv6 hop limit to Action.Arg
	// ("mod_nw_ttl:N").
	ActSetNwTTL
	// ActDecTTL decrements the IPv4 TTL or IPv6 hop limit; a packet whose
	// TTL is 0 or 1 is not processed further ("dec_ttl").
	ActDecTTL
	// ActSetTpSrc and ActSetTpDst set a TCP or UDP port to Action.Arg, on
	// TCP and UDP packets that are not later fragments ("mod_tp_src:N",
	// "mod_tp_dst:N").
	ActSetTpSrc
	ActSetTpDst
	// ActResubmit looks the packet, as modified so far, up in table
	// Action.Table and runs the matching rule's actions there, then goes
	// on with the actions after it ("resubmit(,N)").
	ActResubmit
	// ActGotoTable goes on in table Action.Table after the rule's actions
	// ("goto_table:N": the last action, to a later table).
	ActGotoTable
	// ActSetIPv6Src and ActSetIPv6Dst set an IPv6 address to Action.IP6,
	// on IPv6 packets only ("set_field:IP6->ipv6_src", "->ipv6_dst").
	ActSetIPv6Src
	ActSetIPv6Dst
	// ActSetVLANPCP sets the outer tag's PCP to Action.Arg (0-7), keeping
	// its VID and TPID, or pushes an 802.1Q tag with VID 0 when there is
	// none ("mod_vlan_pcp:N", "set_field:N->vlan_pcp").
	ActSetVLANPCP
	// ActPushVLAN pushes a tag with TPID Action.Arg (0x8100 or 0x88a8),
	// VID 0 and PCP 0 as Open vSwitch does ("push_vlan:TPID").
	ActPushVLAN
)

// Action is one policy action. Only the fields its Type uses are set;
// Actions compare with ==.
type Action struct {
	Type ActionType
	// Port is the output port of ActOutput.
	Port uint32
	// PortName is the port name of output:NAME (Port is then the port's
	// number once RuleSet.Resolve found it, else NoPort: the output is
	// skipped).
	PortName string
	// Arg is the VLAN ID, TOS, TTL or L4 port of the mod_* actions.
	Arg uint16
	// Table is the table of ActResubmit and ActGotoTable.
	Table uint8
	// MAC is the address of ActSetDlSrc and ActSetDlDst.
	MAC [6]byte
	// IP is the address of ActSetNwSrc and ActSetNwDst.
	IP [4]byte
	// IP6 is the address of ActSetIPv6Src and ActSetIPv6Dst.
	IP6 [16]byte
	// Userdata is the userspace cookie of ActController (raw bytes; empty
	// for none).
	Userdata string
	// CT holds the arguments of ActCT (its table= in Table).
	CT CTArgs
	// Group is the group of ActGroup.
	Group uint32
}

// String formats the action in the rule syntax.
func (a Action) String() string {
	switch a.Type {
	case ActOutput:
		if a.PortName != "" {
			return "output:" + a.PortName
		}
		return fmt.Sprintf("output:%d", a.Port)
	case ActNormal:
		return "normal"
	case ActFlood:
		return "flood"
	case ActAll:
		return "all"
	case ActController:
		if a.Userdata == "" {
			return "controller"
		}
		return "controller(userdata=" + hex.EncodeToString([]byte(a.Userdata)) + ")"
	case ActSetVLAN:
		return fmt.Sprintf("mod_vlan_vid:%d", a.Arg)
	case ActStripVLAN:
		return "strip_vlan"
	case ActSetDlSrc:
		return "mod_dl_src:" + fmtMAC(a.MAC)
	case ActSetDlDst:
		return "mod_dl_dst:" + fmtMAC(a.MAC)
	case ActSetNwSrc:
		return "mod_nw_src:" + netip.AddrFrom4(a.IP).String()
	case ActSetNwDst:
		return "mod_nw_dst:" + netip.AddrFrom4(a.IP).String()
	case ActSetNwTOS:
		return fmt.Sprintf("mod_nw_tos:%d", a.Arg)
	case ActSetNwTTL:
		return fmt.Sprintf("mod_nw_ttl:%d", a.Arg)
	case ActDecTTL:
		return "dec_ttl"
	case ActSetTpSrc:
		return fmt.Sprintf("mod_tp_src:%d", a.Arg)
	case ActSetTpDst:
		return fmt.Sprintf("mod_tp_dst:%d", a.Arg)
	case ActSetIPv6Src:
		return "set_field:" + netip.AddrFrom16(a.IP6).String() + "->ipv6_src"
	case ActSetIPv6Dst:
		return "set_field:" + netip.AddrFrom16(a.IP6).String() + "->ipv6_dst"
	case ActSetVLANPCP:
		return fmt.Sprintf("mod_vlan_pcp:%d", a.Arg)
	case ActPushVLAN:
		return fmt.Sprintf("push_vlan:0x%04x", a.Arg)
	case ActResubmit:
		return fmt.Sprintf("resubmit(,%d)", a.Table)
	case ActGotoTable:
		return fmt.Sprintf("goto_table:%d", a.Table)
	}
	if s, ok := a.stringCT(); ok {
		return s
	}
	return fmt.Sprintf("unknown_action_%d", a.Type)
}

// formatActions formats an action list in the rule syntax ("drop" when
// empty).
func formatActions(as []Action) string {
	if len(as) == 0 {
		return "drop"
	}
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(a.String())
	}
	return b.String()
}

// maxUserdata bounds controller userdata (the netlink attribute limit
// leaves room for much more; this keeps actions small).
const maxUserdata = 256

// parseActions parses the action list that starts at p.pos and runs to
// the end of the line. Actions are separated by commas; blanks around
// them are allowed.
func (p *lineParser) parseActions() ([]Action, error) {
	as := []Action{}
	dropPos := -1
	for {
		for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\r') {
			p.pos++
		}
		if p.pos >= len(p.s) {
			if len(as) == 0 && dropPos < 0 {
				return nil, p.errAt(p.pos, "expected an action after actions= (use \"drop\" to drop)")
			}
			return nil, p.errAt(p.pos, "expected an action after ','")
		}
		start := p.pos
		// An action runs to the next comma outside parentheses.
		depth := 0
		for p.pos < len(p.s) {
			c := p.s[p.pos]
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
			} else if c == ',' && depth == 0 {
				break
			}
			p.pos++
		}
		tok := strings.TrimRight(p.s[start:p.pos], " \t\r")
		if tok == "" {
			return nil, p.errAt(start, "expected an action, found ','")
		}
		if len(as) > 0 && as[len(as)-1].Type == ActGotoTable {
			return nil, p.errAt(start, "goto_table must be the last action")
		}
		if strings.EqualFold(tok, "drop") {
			if len(as) > 0 {
				return nil, p.errAt(start, "drop must be the only action")
			}
			dropPos = start
		} else {
			if dropPos >= 0 {
				return nil, p.errAt(dropPos, "drop must be the only action")
			}
			a, err := p.parseAction(tok, start)
			if err != nil {
				return nil, err
			}
			as = append(as, a)
			p.actPos = append(p.actPos, start)
		}
		if p.pos >= len(p.s) {
			return as, nil
		}
		p.pos++ // ','
	}
}

// parseAction parses one action token that starts at offset start.
func (p *lineParser) parseAction(tok string, start int) (Action, error) {
	if tok[0] >= '0' && tok[0] <= '9' {
		n, ok := parseNum(tok, 32)
		if !ok {
			return Action{}, p.errAt(start, "expected a port number (0-4294967295) as an output action")
		}
		return Action{Type: ActOutput, Port: uint32(n)}, nil
	}
	i := 0
	for i < len(tok) && isNameChar(tok[i]) {
		i++
	}
	name := strings.ToLower(tok[:i])
	rest := tok[i:]
	argPos := start + i + 1
	noArg := func(t ActionType) (Action, error) {
		if rest != "" {
			return Action{}, p.errAt(start+i, "unexpected %q after %s", rest, name)
		}
		return Action{Type: t}, nil
	}
	// arg returns the text after "name:".
	arg := func(what string) (string, error) {
		if rest == "" || rest[0] != ':' {
			return "", p.errAt(start+i, "expected ':' and %s after %s", what, name)
		}
		return rest[1:], nil
	}
	switch name {
	case "":
		return Action{}, p.errAt(start, "expected an action, found %q", tok[0])
	case "normal":
		return noArg(ActNormal)
	case "ct":
		return p.parseCT(rest, start+i)
	case "ct_clear":
		return noArg(ActCTClear)
	case "group":
		return p.parseGroupAction(rest, start+i)
	case "flood":
		return noArg(ActFlood)
	case "all":
		return noArg(ActAll)
	case "strip_vlan", "pop_vlan":
		return noArg(ActStripVLAN)
	case "push_vlan":
		s, err := arg("a TPID (0x8100 or 0x88a8)")
		if err != nil {
			return Action{}, err
		}
		n, ok := parseNum(s, 16)
		if !ok || n != 0x8100 && n != 0x88a8 {
			return Action{}, p.errAt(argPos, "expected a TPID (0x8100 or 0x88a8) after push_vlan:")
		}
		return Action{Type: ActPushVLAN, Arg: uint16(n)}, nil
	case "set_field":
		s, err := arg("VALUE->FIELD")
		if err != nil {
			return Action{}, err
		}
		return p.parseSetField(s, argPos)
	case "dec_ttl":
		return noArg(ActDecTTL)
	case "resubmit":
		inner, ok := strings.CutPrefix(rest, "(,")
		if !ok || !strings.HasSuffix(inner, ")") {
			return Action{}, p.errAt(start+i, "expected (,TABLE) after resubmit (resubmitting to a port is not supported)")
		}
		n, ok := parseNum(inner[:len(inner)-1], 8)
		if !ok || n > MaxTable {
			return Action{}, p.errAt(start+i+2, "expected a table number (0-%d) in resubmit(,TABLE)", MaxTable)
		}
		return Action{Type: ActResubmit, Table: uint8(n)}, nil
	case "goto_table":
		s, err := arg("a table number")
		if err != nil {
			return Action{}, err
		}
		n, ok := parseNum(s, 8)
		if !ok || n > MaxTable {
			return Action{}, p.errAt(argPos, "expected a table number (0-%d) after goto_table:", MaxTable)
		}
		if int(n) <= p.table {
			return Action{}, p.errAt(argPos, "goto_table:%d in table %d: goto_table goes to a later table (use resubmit(,%d) to go back)", n, p.table, n)
		}
		return Action{Type: ActGotoTable, Table: uint8(n)}, nil
	case "controller":
		if rest == "" {
			return Action{Type: ActController}, nil
		}
		inner, ok := strings.CutPrefix(rest, "(userdata=")
		if !ok || !strings.HasSuffix(inner, ")") {
			return Action{}, p.errAt(start+i, "expected nothing or (userdata=HEX) after controller")
		}
		h := strings.ReplaceAll(inner[:len(inner)-1], ".", "")
		d, err := hex.DecodeString(h)
		if err != nil || len(d) == 0 || len(d) > maxUserdata {
			return Action{}, p.errAt(start+i+len("(userdata="), "expected 1 to %d bytes of hex (dots allowed between bytes) after userdata=", maxUserdata)
		}
		return Action{Type: ActController, Userdata: string(d)}, nil
	case "output":
		s, err := arg("a port number or name")
		if err != nil {
			return Action{}, err
		}
		if isPortName(s) {
			return Action{Type: ActOutput, Port: NoPort, PortName: s}, nil
		}
		n, ok := parseNum(s, 32)
		if !ok {
			return Action{}, p.errAt(argPos, "expected a port number (0-4294967295) or name after output:")
		}
		return Action{Type: ActOutput, Port: uint32(n)}, nil
	case "mod_vlan_vid", "mod_vlan_pcp", "mod_nw_tos", "mod_nw_ttl", "mod_tp_src", "mod_tp_dst":
		var (
			what string
			nb   int
			t    ActionType
		)
		switch name {
		case "mod_vlan_vid":
			what, nb, t = "a VLAN ID (0-4095)", 12, ActSetVLAN
		case "mod_vlan_pcp":
			what, nb, t = "a priority (0-7)", 3, ActSetVLANPCP
		case "mod_nw_tos":
			what, nb, t = "a DSCP value (0-255, a multiple of 4)", 8, ActSetNwTOS
		case "mod_nw_ttl":
			what, nb, t = "a TTL (0-255)", 8, ActSetNwTTL
		case "mod_tp_src":
			what, nb, t = "a port number (0-65535)", 16, ActSetTpSrc
		default:
			what, nb, t = "a port number (0-65535)", 16, ActSetTpDst
		}
		s, err := arg(what)
		if err != nil {
			return Action{}, err
		}
		n, ok := parseNum(s, nb)
		if !ok || t == ActSetNwTOS && n&3 != 0 {
			return Action{}, p.errAt(argPos, "expected %s after %s:", what, name)
		}
		return Action{Type: t, Arg: uint16(n)}, nil
	case "mod_dl_src", "mod_dl_dst":
		s, err := arg("a MAC address")
		if err != nil {
			return Action{}, err
		}
		mac, ok := parseMAC(s)
		if !ok {
			return Action{}, p.errAt(argPos, "expected a MAC address (xx:xx:xx:xx:xx:xx) after %s:", name)
		}
		t := ActSetDlSrc
		if name == "mod_dl_dst" {
			t = ActSetDlDst
		}
		return Action{Type: t, MAC: mac}, nil
	case "mod_nw_src", "mod_nw_dst":
		s, err := arg("an IPv4 address")
		if err != nil {
			return Action{}, err
		}
		ip, ok := parseIP(s, 4)
		if !ok {
			return Action{}, p.errAt(argPos, "expected an IPv4 address after %s:", name)
		}
		t := ActSetNwSrc
		if name == "mod_nw_dst" {
			t = ActSetNwDst
		}
		return Action{Type: t, IP: [4]byte(ip)}, nil
	}
	return Action{}, p.errAt(start, "unknown action %q", tok[:max(i, 1)])
}

// setFields maps the field names of set_field to the action that sets
// the field and the syntax of its value.
var setFields = map[string]struct {
	t    ActionType
	kind string // "mac", "ip4", "ip6", "vid", "pcp", "tos", "dscp", "ttl", "port"
}{
	"eth_src": {ActSetDlSrc, "mac"}, "dl_src": {ActSetDlSrc, "mac"},
	"eth_dst": {ActSetDlDst, "mac"}, "dl_dst": {ActSetDlDst, "mac"},
	"ip_src": {ActSetNwSrc, "ip4"}, "nw_src": {ActSetNwSrc, "ip4"}, "ipv4_src": {ActSetNwSrc, "ip4"},
	"ip_dst": {ActSetNwDst, "ip4"}, "nw_dst": {ActSetNwDst, "ip4"}, "ipv4_dst": {ActSetNwDst, "ip4"},
	"ipv6_src": {ActSetIPv6Src, "ip6"}, "ipv6_dst": {ActSetIPv6Dst, "ip6"},
	"vlan_vid": {ActSetVLAN, "vid"}, "dl_vlan": {ActSetVLAN, "vid"},
	"vlan_pcp": {ActSetVLANPCP, "pcp"}, "dl_vlan_pcp": {ActSetVLANPCP, "pcp"},
	"nw_tos": {ActSetNwTOS, "tos"}, "ip_dscp": {ActSetNwTOS, "dscp"},
	"nw_ttl": {ActSetNwTTL, "ttl"},
	"tp_src": {ActSetTpSrc, "port"}, "tcp_src": {ActSetTpSrc, "port"}, "udp_src": {ActSetTpSrc, "port"},
	"tp_dst": {ActSetTpDst, "port"}, "tcp_dst": {ActSetTpDst, "port"}, "udp_dst": {ActSetTpDst, "port"},
}

// setFieldNums are the number syntaxes of set_field values: what the
// error says, the bits.
var setFieldNums = map[string]struct {
	what string
	bits int
}{
	"vid":  {"a VLAN ID (0-4095, or 0x1000-0x1fff with the tag-present bit)", 13},
	"pcp":  {"a priority (0-7)", 3},
	"tos":  {"a DSCP value (0-255, a multiple of 4)", 8},
	"dscp": {"a DSCP value (0-63)", 6},
	"ttl":  {"a TTL (0-255)", 8},
	"port": {"a port number (0-65535)", 16},
}

// parseSetField parses the VALUE->FIELD of set_field (s starts at pos).
// It is the mod_* action of the field, with that action's semantics.
func (p *lineParser) parseSetField(s string, pos int) (Action, error) {
	val, field, ok := strings.Cut(s, "->")
	if !ok {
		return Action{}, p.errAt(pos, "expected VALUE->FIELD after set_field:")
	}
	fpos := pos + len(val) + 2
	sf, ok := setFields[strings.ToLower(field)]
	if !ok {
		if _, isMatch := matchFields[strings.ToLower(field)]; isMatch {
			why := ""
			if f := strings.ToLower(field); strings.HasPrefix(f, "arp_") || strings.HasPrefix(f, "icmp_") {
				// net/openvswitch's validate_set refuses set(arp) and
				// set(icmp): the two datapaths would differ.
				why = ": the kernel datapath cannot rewrite ARP or ICMP fields"
			}
			return Action{}, p.errAt(fpos, "set_field cannot set %s%s (it sets eth_src, eth_dst, vlan_vid, vlan_pcp, ip_src, ip_dst, ipv6_src, ipv6_dst, nw_tos, ip_dscp, nw_ttl, tp_src, tp_dst)", field, why)
		}
		return Action{}, p.errAt(fpos, "unknown field %q after set_field:VALUE->", field)
	}
	bad := func(what string) (Action, error) {
		return Action{}, p.errAt(pos, "expected %s before ->%s", what, field)
	}
	a := Action{Type: sf.t}
	switch sf.kind {
	case "mac":
		mac, ok := parseMAC(val)
		if !ok {
			return bad("a MAC address (xx:xx:xx:xx:xx:xx)")
		}
		a.MAC = mac
	case "ip4":
		ip, ok := parseIP(val, 4)
		if !ok {
			return bad("an IPv4 address")
		}
		a.IP = [4]byte(ip)
	case "ip6":
		ip, ok := parseIP(val, 16)
		if !ok {
			return bad("an IPv6 address")
		}
		a.IP6 = [16]byte(ip)
	default:
		nf := setFieldNums[sf.kind]
		n, ok := parseNum(val, nf.bits)
		if !ok || sf.kind == "tos" && n&3 != 0 {
			return bad(nf.what)
		}
		switch sf.kind {
		case "dscp":
			n <<= 2
		case "vid":
			n &= 0xfff // the OpenFlow form's tag-present bit
		}
		a.Arg = uint16(n)
	}
	return a, nil
}
