package odp

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Action is one OVS_ACTION_ATTR_* action. The concrete types are defined
// in this package (Output, Userspace, Set, SetMasked, PushVLAN, CT,
// Clone, ..., UnknownAction); each has its kernel wire layout and its
// Open vSwitch text form.
type Action interface {
	// ActionType is the action's OVS_ACTION_ATTR_* type.
	ActionType() ActionType

	// appendPayload appends the action's payload (without the netlink
	// header) in the kernel's wire format.
	appendPayload(b []byte) ([]byte, error)

	// format writes the action's text form.
	format(f *textBuf)
}

// Actions is an action list, executed in order. An empty list drops the
// packet.
type Actions []Action

// String formats the list as ovs-dpctl prints it ("drop" when empty).
func (as Actions) String() string { return FormatActions(as) }

// actionDecoder decodes the payload of one action attribute. path names it
// for errors ("actions.clone.set"); depth counts nesting.
type actionDecoder func(a *rawAttr, path string, depth int) (Action, error)

// actionParser parses one action whose leading name has been consumed
// (the scanner is positioned just after the name, before any "(").
type actionParser func(sc *scanner, depth int) (Action, error)

// actionDecoders and actionParsers are filled by the files that define
// each action type (their init functions). A bare port number ("1") and
// names given in actionParsers are the action forms.
var (
	actionDecoders = map[ActionType]actionDecoder{}
	actionParsers  = map[string]actionParser{}
)

// maxActionDepth bounds nested action lists (clone, sample,
// check_pkt_len, dec_ttl) when decoding and parsing. The kernel allows 16
// levels of nested clone (OVS_COPY_ACTIONS_MAX_DEPTH); we accept a few
// more so that the kernel, not us, gives its own error for 17.
const maxActionDepth = 32

// maxActionsLen is the longest encoded action list accepted: Open
// vSwitch's limit (nl_attr_oversized on the list less one header), which
// lets a list reach 65,535 bytes. The kernel itself accepts at most 32 KiB
// of actions per flow (MAX_ACTIONS_BUFSIZE) and says so with EINVAL.
const maxActionsLen = 0xffff

// MarshalActions encodes an action list as netlink attributes (the payload
// of OVS_FLOW_ATTR_ACTIONS or OVS_PACKET_ATTR_ACTIONS). A list longer than
// 65,535 bytes is an error.
func MarshalActions(as Actions) ([]byte, error) {
	b, err := appendActions(nil, as)
	if err != nil {
		return nil, err
	}
	if len(b) > maxActionsLen {
		return nil, fmt.Errorf("odp: actions of %d bytes exceed the limit of %d", len(b), maxActionsLen)
	}
	return b, nil
}

// AppendActions appends the encoding of as (what MarshalActions
// returns) to b, reusing b's capacity, and returns the extended slice;
// it fails as MarshalActions does.
func AppendActions(b []byte, as Actions) ([]byte, error) {
	start := len(b)
	b, err := appendActions(b, as)
	if err != nil {
		return b[:start], err
	}
	if n := len(b) - start; n > maxActionsLen {
		return b[:start], fmt.Errorf("odp: actions of %d bytes exceed the limit of %d", n, maxActionsLen)
	}
	return b, nil
}

// appendActions appends every action of as.
func appendActions(b []byte, as Actions) ([]byte, error) {
	var err error
	for _, a := range as {
		if b, err = appendAction(b, a); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendAction appends one action attribute, header included.
func appendAction(b []byte, a Action) ([]byte, error) {
	start := len(b)
	b = appendAttrHeader(b, uint16(a.ActionType()), 0)
	b, err := a.appendPayload(b)
	if err != nil {
		return b, fmt.Errorf("odp: encode action %s: %w", a.ActionType(), err)
	}
	n := len(b) - start
	if n > 0xffff {
		return b, fmt.Errorf("odp: encode action %s: %d bytes exceed the netlink attribute limit", a.ActionType(), n)
	}
	binary.NativeEndian.PutUint16(b[start:], uint16(n))
	return padAttr(b), nil
}

// UnmarshalActions decodes a sequence of OVS_ACTION_ATTR_* attributes.
// Action types this package does not know are kept as UnknownAction.
func UnmarshalActions(b []byte) (Actions, error) {
	return decodeActions(b, 0, "actions", 0)
}

// decodeActions decodes the actions in b, which starts at byte offset
// base of the outermost buffer.
func decodeActions(b []byte, base int, path string, depth int) (Actions, error) {
	if depth > maxActionDepth {
		return nil, &DecodeError{Attr: path, Offset: base, Err: fmt.Errorf("actions nested more than %d deep", maxActionDepth)}
	}
	as := Actions{}
	w := newAttrWalker(b, base)
	for a := range w.All() {
		t := ActionType(a.Type)
		p := path + "." + t.String()
		var (
			act Action
			err error
		)
		if dec, ok := actionDecoders[t]; ok {
			act, err = dec(a, p, depth)
		} else {
			act = UnknownAction{Type: t, Data: append([]byte{}, a.Data...)}
		}
		if err != nil {
			return nil, err
		}
		as = append(as, act)
	}
	if err := w.listErr(path); err != nil {
		return nil, err
	}
	return as, nil
}

// FormatActions formats an action list as ovs-dpctl prints it: actions
// separated by commas, "drop" for an empty list.
func FormatActions(as Actions) string {
	var f textBuf
	formatActions(&f, as)
	return f.String()
}

// formatActions writes as to f ("drop" when empty).
func formatActions(f *textBuf, as Actions) {
	if len(as) == 0 {
		f.WriteString("drop")
		return
	}
	for i, a := range as {
		if i > 0 {
			f.WriteByte(',')
		}
		a.format(f)
	}
}

// ParseActions parses an action list in the ovs-dpctl syntax
// ("set(ipv4(ttl=63)),push_vlan(vid=10,pcp=0),2"). The bare word "drop"
// alone, or an empty string, is the empty list (which drops); "drop"
// among other actions, or "drop(N)", is an explicit Drop action.
//
// The list must fit in a netlink attribute when encoded (65,531 bytes),
// and nesting is bounded (maxActionDepth): both are reported as a
// SyntaxError, as Open vSwitch rejects them when parsing.
func ParseActions(s string) (Actions, error) {
	sc := newScanner(s)
	as, err := parseActionList(sc, 0)
	if err != nil {
		return nil, err
	}
	sc.skipSpace()
	if !sc.eof() {
		if sc.peek() == ')' {
			return nil, sc.errorf("unbalanced ')'")
		}
		return nil, sc.errorf("expected ',' between actions")
	}
	return as, nil
}

// parseActionList parses comma-separated actions up to the end of the
// input or an unbalanced ')', which it does not consume. It checks that
// the encoded list fits in a netlink attribute.
func parseActionList(sc *scanner, depth int) (Actions, error) {
	if depth > maxActionDepth {
		return nil, sc.errorf("actions nested more than %d deep", maxActionDepth)
	}
	as := Actions{}
	size := 0
	onlyDrop := false
	for {
		sc.skipSpace()
		if sc.eof() || sc.peek() == ')' {
			break
		}
		start := sc.pos
		a, err := parseAction(sc, depth)
		if err != nil {
			return nil, err
		}
		n, err := actEncodedLen(a)
		if err != nil {
			return nil, sc.errorAt(start, "%v", err)
		}
		size += n
		if size > maxActionsLen {
			return nil, sc.errorAt(start, "action list exceeds the netlink limit of %d bytes", maxActionsLen)
		}
		onlyDrop = len(as) == 0 && sc.s[start:sc.pos] == "drop"
		as = append(as, a)
		sc.skipSpace()
		if !sc.accept(",") {
			break
		}
		onlyDrop = false
	}
	if onlyDrop && len(as) == 1 {
		// A bare "drop" is how an empty list is written.
		return Actions{}, nil
	}
	return as, nil
}

// parseAction parses one action.
func parseAction(sc *scanner, depth int) (Action, error) {
	start := sc.pos
	if c := sc.peek(); c >= '0' && c <= '9' {
		n, err := sc.actUint(32, "output port")
		if err != nil {
			return nil, err
		}
		return Output{Port: uint32(n)}, nil
	}
	name := sc.ident()
	if p, ok := actionParsers[name]; ok {
		a, err := p(sc, depth)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	if num, ok := strings.CutPrefix(name, "action"); ok && num != "" {
		if t, err := strconv.ParseUint(num, 10, 14); err == nil {
			if _, known := actionDecoders[ActionType(t)]; known {
				return nil, sc.errorAt(start, "%q is %s: write it in that action's syntax", name, ActionType(t))
			}
			return parseUnknownAction(sc, ActionType(t))
		}
	}
	if name == "" {
		return nil, sc.errorAt(start, "expected an action")
	}
	return nil, sc.errorAt(start, "unknown action %q", name)
}

// Output sends the packet to a datapath port (OVS_ACTION_ATTR_OUTPUT,
// a u32 port number). Its text form is the bare port number.
type Output struct {
	// Port is the datapath port number.
	Port uint32
}

// ActionType implements Action.
func (Output) ActionType() ActionType { return ActionOutput }

func (o Output) appendPayload(b []byte) ([]byte, error) {
	return binary.NativeEndian.AppendUint32(b, o.Port), nil
}

func (o Output) format(f *textBuf) { f.writePort(o.Port) }

func init() {
	actionDecoders[ActionOutput] = func(a *rawAttr, path string, _ int) (Action, error) {
		if err := wantLen(a, path, 4); err != nil {
			return nil, err
		}
		return Output{Port: binary.NativeEndian.Uint32(a.Data)}, nil
	}
}

// UnknownAction is an action whose type this package does not know. It is
// kept as raw bytes and formatted as "actionN(HEX)".
type UnknownAction struct {
	// Type is the attribute type.
	Type ActionType
	// Data is the raw payload.
	Data []byte
}

// ActionType implements Action.
func (u UnknownAction) ActionType() ActionType { return u.Type }

func (u UnknownAction) appendPayload(b []byte) ([]byte, error) { return append(b, u.Data...), nil }

// format writes "actionN(xx xx ...)" (bytes separated by blanks), or
// "actionN" when the payload is empty, as Open vSwitch does.
func (u UnknownAction) format(f *textBuf) {
	fmt.Fprintf(f, "action%d", u.Type)
	for i, c := range u.Data {
		if i == 0 {
			f.WriteByte('(')
		} else {
			f.WriteByte(' ')
		}
		writeHex(f, []byte{c})
	}
	if len(u.Data) > 0 {
		f.WriteByte(')')
	}
}

// parseUnknownAction parses the "(xx xx ...)" after "actionN".
func parseUnknownAction(sc *scanner, t ActionType) (Action, error) {
	u := UnknownAction{Type: t, Data: []byte{}}
	if !sc.accept("(") {
		return u, nil
	}
	d, err := sc.hexBytes("action payload")
	if err != nil {
		return nil, err
	}
	u.Data = d
	if err := sc.actExpect(")", "action payload"); err != nil {
		return nil, err
	}
	return u, nil
}
