package flowkeys

import "encoding/binary"

// ExtractPortHashed is ExtractPortL3 that also returns HashMicroflow of
// the key under h: the key, the offset and the error are those of
// ExtractPortL3, and the hash is HashMicroflow(key, h) whenever err is
// nil.
//
// It is the datapath's receive path. The common frame, an untagged
// Ethernet II frame carrying an IPv4 header without options that is not
// a fragment, with a whole UDP header or a whole TCP header, is
// extracted in straight-line code that hashes the fields from the
// registers it read them into (no second pass over the key); every other
// frame goes through the general extraction and then HashMicroflow.
func ExtractPortHashed(packet []byte, inPort uint32, key *Key, h *KeyedHasher) (l3 int, hash uint32, err error) {
	l3, hash, _, err = ExtractPortHashedOver(packet, inPort, key, h, false)
	return l3, hash, err
}

// ExtractPortHashedOver is ExtractPortHashed over a key that may already
// be in the state its straight-line path leaves every field it does not
// write, so that it need not zero them again: the key, offset, hash and
// error are ExtractPortHashed's. straight reports that the
// straight-line path extracted the packet.
//
// The straight-line path writes only the key's InPort, MacProto,
// EthDst, EthSrc, EthType, IPTOS, IPTTL, IPProto, IPv4Src, IPv4Dst,
// TpSrc, TpDst and TCPFlags, and leaves every other field of the key's
// head (KeyHeadWords) zero. zeroed says that the key is so already: it
// may be set when the last call on the key returned straight and
// nothing but those fields changed in the key since. With zeroed false
// the key's old contents do not matter, as for ExtractPortHashed.
func ExtractPortHashedOver(packet []byte, inPort uint32, key *Key, h *KeyedHasher, zeroed bool) (l3 int, hash uint32, straight bool, err error) {
	p := packet
	// Ethernet (14) + IPv4 without options (20) + UDP (8): the shortest
	// frame the straight-line path takes. With these lengths checked,
	// its constant indexes need no bounds checks.
	if len(p) < 42 || be32(p[12:16])>>8 != EthTypeIPv4<<8|0x45 || // no VLAN tag or LLC; version 4, IHL 5
		be16(p[20:22])&0x3fff != 0 { // neither a later fragment (offset) nor a first one (MF)
		l3, hash, err = extractHashed(packet, inPort, key, h)
		return l3, hash, false, err
	}
	proto := p[23]
	var sport, dport, flags uint16
	switch proto {
	case 17: // UDP: its 8-byte header is within the 42 bytes
		sport, dport = be16(p[34:36]), be16(p[36:38])
	case 6: // TCP: tcphdr_ok, the whole header with its options
		if len(p) < 54 {
			l3, hash, err = extractHashed(packet, inPort, key, h)
			return l3, hash, false, err
		}
		if doff := int(p[46]>>4) * 4; doff < 20 || len(p)-34 < doff {
			l3, hash, err = extractHashed(packet, inPort, key, h)
			return l3, hash, false, err
		}
		sport, dport = be16(p[34:36]), be16(p[36:38])
		flags = be16(p[46:48]) & 0x0fff
	default:
		l3, hash, err = extractHashed(packet, inPort, key, h)
		return l3, hash, false, err
	}

	// The fields extractEthernet writes for such a frame.
	le := binary.LittleEndian
	if !zeroed {
		zeroHead(key)
	}
	key.InPort = inPort
	key.MacProto = MacProtoEthernet
	key.EthDst = [6]byte(p[0:6])
	key.EthSrc = [6]byte(p[6:12])
	key.EthType = EthTypeIPv4
	key.IPTOS = p[15]
	key.IPTTL = p[22]
	key.IPProto = proto
	key.IPv4Src = [4]byte(p[26:30])
	key.IPv4Dst = [4]byte(p[30:34])
	key.TpSrc, key.TpDst, key.TCPFlags = sport, dport, flags

	// HashMicroflow's words, loaded from the packet.
	w0 := uint64(inPort)
	w1 := uint64(le.Uint32(p[34:38])) | uint64(EthTypeIPv4)<<32 // the ports in wire order; no VLAN
	w2 := le.Uint64(p[26:34])                                   // the IPv4 addresses
	w3 := le.Uint64(p[0:8])                                     // eth_dst, then eth_src's first 2 bytes
	w4 := uint64(le.Uint32(p[8:12])) | uint64(proto)<<32        // eth_src's last 4 bytes
	lo, hi := microflowSums(w0, w1, w2, w3, w4, h)
	return 14, finish(lo ^ hi ^ h.final), true, nil
}

// extractHashed is ExtractPortHashed for the frames its straight-line
// path does not take: the general extraction, then HashMicroflow.
func extractHashed(packet []byte, inPort uint32, key *Key, h *KeyedHasher) (l3 int, hash uint32, err error) {
	l3, err = extractEthernet(packet, key, true, inPort)
	if err != nil {
		return 0, 0, err
	}
	return l3, HashMicroflow(key, h), nil
}
