package odp

// NormalizeActions returns as with every set_masked action normalized
// (SetMasked.Normalize: value bits cleared where the mask is zero, which
// the kernel requires), nested action lists included. Text parsed from
// Open vSwitch syntax may carry such bits; install flows only after this.
func NormalizeActions(as Actions) Actions {
	if as == nil {
		return nil
	}
	out := make(Actions, len(as))
	for i, a := range as {
		switch v := a.(type) {
		case SetMasked:
			a = v.Normalize()
		case Clone:
			v.Actions = NormalizeActions(v.Actions)
			a = v
		case Sample:
			v.Actions = NormalizeActions(v.Actions)
			a = v
		case CheckPktLen:
			v.Greater = NormalizeActions(v.Greater)
			v.LessEqual = NormalizeActions(v.LessEqual)
			a = v
		case DecTTL:
			v.LE1 = NormalizeActions(v.LE1)
			a = v
		}
		out[i] = a
	}
	return out
}

// AddTCPFlags returns key and mask with a fully wildcarded tcp_flags
// attribute added after every tcp attribute that lacks one (at the top
// level and inside encap). The kernel requires OVS_KEY_ATTR_TCP_FLAGS
// whenever a flow's key has OVS_KEY_ATTR_TCP, and rejects the flow with
// EINVAL otherwise; Open vSwitch's ovs-dpctl does not add it. A nil mask
// (exact match) stays nil and the added attribute is then exact zero.
func AddTCPFlags(key, mask FlowKey) (FlowKey, FlowKey) {
	if key.Find(KeyTCP) != nil && key.Find(KeyTCPFlags) == nil {
		key = insertAfter(key, KeyTCP, TCPFlags(0))
		if mask != nil {
			if mask.Find(KeyTCP) != nil {
				mask = insertAfter(mask, KeyTCP, TCPFlags(0))
			} else {
				mask = append(mask[:len(mask):len(mask)], TCPFlags(0))
			}
		}
	}
	for i, a := range key {
		e, ok := a.(Encap)
		if !ok {
			continue
		}
		var me Encap
		var mi = -1
		for j, m := range mask {
			if x, ok := m.(Encap); ok {
				me, mi = x, j
				break
			}
		}
		var inner FlowKey
		if mi >= 0 {
			inner = me.Key
		}
		nk, nm := AddTCPFlags(e.Key, inner)
		key = append(FlowKey(nil), key...)
		key[i] = Encap{Key: nk}
		if mi >= 0 {
			mask = append(FlowKey(nil), mask...)
			mask[mi] = Encap{Key: nm}
		}
	}
	return key, mask
}

// insertAfter returns a copy of k with a inserted after the first
// attribute of type t.
func insertAfter(k FlowKey, t KeyType, a KeyAttr) FlowKey {
	out := make(FlowKey, 0, len(k)+1)
	done := false
	for _, x := range k {
		out = append(out, x)
		if !done && x.KeyType() == t {
			out = append(out, a)
			done = true
		}
	}
	return out
}
