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
		if v, ok := a.(SetMasked); ok {
			out[i] = v.Normalize()
		} else {
			out[i] = MapNested(a, NormalizeActions)
		}
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
	return inEveryLevel(key, mask, addTCPFlagsLevel)
}

// addTCPFlagsLevel is AddTCPFlags on one level of a key (no encap).
func addTCPFlagsLevel(key, mask FlowKey) (FlowKey, FlowKey) {
	if key.Find(KeyTCP) != nil && key.Find(KeyTCPFlags) == nil {
		key, mask = insertBoth(key, mask, KeyTCP, TCPFlags(0))
	}
	return key, mask
}

// inEveryLevel applies f to key and mask, then to every VLAN encap
// nested in them (the encap's key with the mask's encap, or a nil mask
// when the mask has none), and returns the results; the inputs are not
// modified as long as f does not modify its own.
func inEveryLevel(key, mask FlowKey, f func(key, mask FlowKey) (FlowKey, FlowKey)) (FlowKey, FlowKey) {
	key, mask = f(key, mask)
	for i, a := range key {
		e, ok := a.(Encap)
		if !ok {
			continue
		}
		mi := -1
		var inner FlowKey
		for j, m := range mask {
			if x, ok := m.(Encap); ok {
				mi, inner = j, x.Key
				break
			}
		}
		nk, nm := inEveryLevel(e.Key, inner, f)
		key = append(FlowKey(nil), key...)
		key[i] = Encap{Key: nk}
		if mi >= 0 {
			mask = append(FlowKey(nil), mask...)
			mask[mi] = Encap{Key: nm}
		}
	}
	return key, mask
}

// insertBoth returns key with a inserted after its attribute of type
// after, and mask (unless nil: an exact match) with a inserted after its
// own attribute of that type, or appended when it has none.
func insertBoth(key, mask FlowKey, after KeyType, a KeyAttr) (FlowKey, FlowKey) {
	key = insertAfter(key, after, a)
	if mask != nil {
		if mask.Find(after) != nil {
			mask = insertAfter(mask, after, a)
		} else {
			mask = append(mask[:len(mask):len(mask)], a)
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
