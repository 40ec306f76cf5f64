package odp_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
)

// erspanTun is a tunnel key with the given ERSPAN option attribute:
// raw bytes as OVS_TUNNEL_KEY_ATTR_ERSPAN_OPTS (any length, as the
// kernel takes), or nil for none.
func erspanTun(raw []byte) odp.Tunnel {
	t := geneveTun(nil)
	if raw != nil {
		t.Unknown = []odp.UnknownKey{{Type: 15, Data: raw}}
	}
	return t
}

// erspanV1 is struct erspan_metadata for version 1 with index idx.
func erspanV1(idx uint32) []byte {
	return []byte{1, 0, 0, 0, byte(idx >> 24), byte(idx >> 16), byte(idx >> 8), byte(idx), 0, 0, 0, 0}
}

// TestToFlowKeysERSPAN: ERSPAN options in flows as Linux 6.1's
// erspan_tun_opt_from_nlattr takes them: the 12 bytes of struct
// erspan_metadata in TunOpts with TUNNEL_ERSPAN_OPT, tun_opts_len 12
// (0xff in the mask), an attribute of another length right-aligned in
// those 12 bytes, and the dump as the kernel's (then ovs-dpctl's text).
func TestToFlowKeysERSPAN(t *testing.T) {
	md := erspanV1(7)
	key := fk(erspanTun(md), odp.InPort(1), eth, odp.Ethertype(0x88b5))
	k, m, err := odp.ToFlowKeys(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.TunOptsBytes(), md) || k.TunFlags&odp.KernelTunnelERSPANOpt == 0 || k.TunFlags&odp.KernelTunnelGeneveOpt != 0 {
		t.Errorf("exact flow: key options %x (len %d, flags %#x), want %x with TUNNEL_ERSPAN_OPT", k.TunOptsBytes(), k.TunOptsLen, k.TunFlags, md)
	}
	if m.TunOptsLen != 0xff || !bytes.Equal(m.TunOpts[:12], bytes.Repeat([]byte{0xff}, 12)) || m.TunOpts[12] != 0 {
		t.Errorf("exact flow: mask options %x (len %#x), want 12 bytes of 0xff and length 0xff", m.TunOpts[:16], m.TunOptsLen)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); !strings.Contains(got, "erspan(ver=1,idx=0x7/0xffffffff)") {
		t.Errorf("dump of the exact flow: %s", got)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, false); !strings.Contains(got, "erspan(ver=1,idx=0x7)") {
		t.Errorf("dump of the exact key: %s", got)
	}
	exactMask := m

	// A mask on the index's low byte: the key keeps it, the dump puts
	// it back.
	mask := fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst | odp.TunnelHasTTL, IPv4Dst: [4]byte{255, 255, 255, 255},
		Unknown: []odp.UnknownKey{{Type: 15, Data: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0}}}},
		odp.InPort(0xffff), odp.Ethernet{}, odp.Ethertype(0xffff))
	k, m, err = odp.ToFlowKeys(fk(erspanTun(erspanV1(0x1234)), odp.InPort(1), eth, odp.Ethertype(0x88b5)), mask)
	if err != nil {
		t.Fatal(err)
	}
	if want := erspanV1(0x34); !bytes.Equal(k.TunOptsBytes(), want) || m.TunOptsLen != 0xff {
		t.Errorf("masked flow: key options %x, want %x; mask length %#x", k.TunOptsBytes(), want, m.TunOptsLen)
	}
	dk, dm := odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k)
	if got := odp.FormatKey(dk, dm, false); !strings.Contains(got, "erspan(ver=1,idx=0x34/0xff)") {
		t.Errorf("dump of the masked flow: %s", got)
	}
	if k2, m2, err := odp.ToFlowKeys(dk, dm); err != nil || k2 != k || m2 != m {
		t.Errorf("dump and put again of %s: %v (changed: %v)", odp.FormatKey(dk, dm, false), err, k2 != k || m2 != m)
	}

	// The text forms, parsed as ovs-dpctl parses them, put and dumped.
	for _, c := range []struct{ in, want string }{
		{"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=1,idx=0x7/0xff)),eth(),eth_type(0x88b5)", "erspan(ver=1,idx=0x7/0xff)"},
		{"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,dir=1,hwid=0x7)),eth(),eth_type(0x88b5)", "erspan(ver=2,dir=1/0x1,hwid=0x7/0xf)"},
		{"tunnel(dst=1.2.3.4,ttl=64,erspan(ver=2,dir=0/0,hwid=0x3/0xf)),eth(),eth_type(0x88b5)", "erspan(ver=2,hwid=0x3/0xf)"},
	} {
		pk, pm, err := odp.ParseMaskedKey(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		k, m, err := odp.ToFlowKeys(pk, pm)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); !strings.Contains(got, c.want) {
			t.Errorf("%s dumps as %s, want %s", c.in, got, c.want)
		}
	}

	// hwid_upper is matched but not shown, as format_odp_tun_erspan_opt.
	v2 := []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x78}
	k, m, err = odp.ToFlowKeys(fk(erspanTun(v2), eth), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), nil, false); !strings.Contains(got, "erspan(ver=2,dir=1,hwid=0x7)") {
		t.Errorf("hwid_upper 1, hwid 7 dumps as %s", got)
	}
	if !bytes.Equal(k.TunOptsBytes(), v2) {
		t.Errorf("v2 key options %x, want %x", k.TunOptsBytes(), v2)
	}

	// A mask without the options wildcards them and their length; the
	// dump then has no erspan().
	k, m, err = odp.ToFlowKeys(key, fk(odp.Tunnel{Present: odp.TunnelHasIPv4Dst, IPv4Dst: [4]byte{255, 255, 255, 255}}, odp.Ethernet{}))
	if err != nil || k.TunOptsLen != 0 || m.TunOptsLen != 0 || k.TunOpts != ([flowkeys.TunOptsMax]byte{}) || m.Range().End > flowkeys.KeyHeadWords {
		t.Errorf("mask without options: %v; key options %x, mask length %#x, range %v", err, k.TunOptsBytes(), m.TunOptsLen, m.Range())
	}
	if got := odp.FormatKey(odp.KeyFromFlowKeys(&k), odp.MaskFromFlowKeys(&m, &k), false); strings.Contains(got, "erspan") {
		t.Errorf("a flow with the options wildcarded dumps as %s", got)
	}

	// An attribute shorter than 12 bytes fills the last bytes of the
	// 12; the version stays zero.
	k, m, err = odp.ToFlowKeys(fk(erspanTun([]byte{0, 0, 0, 7, 0, 0, 0, 0}), eth), nil)
	want := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0}
	if err != nil || !bytes.Equal(k.TunOptsBytes(), want) || m.TunOptsLen != 0xff ||
		!bytes.Equal(m.TunOpts[:12], []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("8-byte attribute: %v; key %x, mask %x (len %#x), want key %x", err, k.TunOptsBytes(), m.TunOpts[:12], m.TunOptsLen, want)
	}

	// A longer one: its first bytes are outside the 12. Zero there, the
	// flow is the 12-byte one's; otherwise flowkeys.Key cannot hold it.
	long := append(make([]byte, 4), md...)
	if k, m2, err := odp.ToFlowKeys(fk(erspanTun(long), eth), nil); err != nil || !bytes.Equal(k.TunOptsBytes(), md) || m2.TunOpts != exactMask.TunOpts {
		t.Errorf("16-byte attribute with 4 zero bytes first: %v; key %x", err, k.TunOptsBytes())
	}
	long[0] = 1
	if _, _, err := odp.ToFlowKeys(fk(erspanTun(long), eth), nil); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "before the 12") {
		t.Errorf("16-byte attribute matching a byte before the 12: %v, want ErrUnsupported", err)
	}
	// ... unless the mask leaves that byte out.
	if _, _, err := odp.ToFlowKeys(fk(erspanTun(long), eth), fk(erspanTun(append(make([]byte, 4), bytes.Repeat([]byte{0xff}, 12)...)), odp.Ethernet{})); err != nil {
		t.Errorf("16-byte attribute, its first byte not in the mask: %v", err)
	}

	// The upcall and execute path: the key's options.
	ek, err := odp.ToFlowKeysExact(key)
	if err != nil || !bytes.Equal(ek.TunOptsBytes(), md) || ek.TunFlags&odp.KernelTunnelERSPANOpt == 0 {
		t.Errorf("ToFlowKeysExact: %v, options %x, flags %#x", err, ek.TunOptsBytes(), ek.TunFlags)
	}
	if back := odp.FormatKey(odp.KeyFromFlowKeys(&ek), nil, true); !strings.Contains(back, "erspan(ver=1,idx=0x7)") {
		t.Errorf("KeyFromFlowKeys of an upcall key lost its options: %s", back)
	}

	// The kernel's EINVALs.
	both := erspanTun(md)
	both.Present |= odp.TunnelHasGeneve
	both.Geneve = []byte{}
	for _, c := range []struct {
		name      string
		key, mask odp.FlowKey
		reason    string
	}{
		{"256 bytes", fk(erspanTun(make([]byte, 256)), eth), nil, "ERSPAN option length err (len 256, max 255)"},
		{"geneve and erspan", fk(both, eth), nil, "multiple metadata blocks"},
		{"mask geneve of another length", key, fk(geneveTun(make([]byte, 8)), odp.Ethernet{}), "Geneve option len 12 != mask len 8"},
	} {
		_, _, err := odp.ToFlowKeys(c.key, c.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want EINVAL with %q", c.name, err, c.reason)
		}
	}
}
