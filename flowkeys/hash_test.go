package flowkeys_test

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand"
	"os"
	"os/exec"
	"testing"

	"github.com/ovsdp/ovsdp/flowkeys"
)

func randKey(rng *rand.Rand) flowkeys.Key {
	var k flowkeys.Key
	for i := range k.Words() {
		k.Words()[i] = rng.Uint64()
	}
	return k
}

func randRange(rng *rand.Rand) flowkeys.Range {
	s := rng.Intn(flowkeys.KeyWords)
	return flowkeys.Range{Start: s, End: s + 1 + rng.Intn(flowkeys.KeyWords-s)}
}

// stdCRC is the plain CRC32C of the words in r, computed by hash/crc32
// over the key's bytes (undoing its pre- and post-inversion).
func stdCRC(k *flowkeys.Key, r flowkeys.Range, seed uint32) uint32 {
	b := k.Bytes()[8*r.Start : 8*r.End]
	return ^crc32.Update(^seed, crc32.MakeTable(crc32.Castagnoli), b)
}

func TestHashCRC32CMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 5000; i++ {
		k := randKey(rng)
		r := randRange(rng)
		seed := rng.Uint32()
		if got, want := flowkeys.HashCRC32C(&k, r, seed), stdCRC(&k, r, seed); got != want {
			t.Fatalf("HashCRC32C(range %v, seed %#x) = %#x, hash/crc32 says %#x", r, seed, got, want)
		}
	}
	var k flowkeys.Key
	if got := flowkeys.HashCRC32C(&k, flowkeys.Range{}, 77); got != 77 {
		t.Errorf("CRC of an empty range = %d, want the seed", got)
	}
}

// Published lookup3 values: hashword() equals hashlittle() on whole
// 32-bit words (little-endian), and hashlittle("", 0) = 0xdeadbeef,
// hashlittle("\0\0\0\0", 0) = 76781240, hashlittle("hello, world", 0) =
// 1503810069.
func TestJHash2Vectors(t *testing.T) {
	hw := []byte("hello, world")
	cases := []struct {
		in   []uint32
		seed uint32
		want uint32
	}{
		{nil, 0, 0xdeadbeef},
		{nil, 0xdeadbeef, 0xbd5b7dde},
		{[]uint32{0}, 0, 76781240},
		{[]uint32{binary.LittleEndian.Uint32(hw), binary.LittleEndian.Uint32(hw[4:]), binary.LittleEndian.Uint32(hw[8:])}, 0, 1503810069},
	}
	for _, c := range cases {
		if got := flowkeys.JHash2(c.in, c.seed); got != c.want {
			t.Errorf("JHash2(%x, %#x) = %d, want %d", c.in, c.seed, got, c.want)
		}
	}
}

func TestHashJHash2OverWords(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 1000; i++ {
		k := randKey(rng)
		r := randRange(rng)
		b := k.Bytes()[8*r.Start : 8*r.End]
		u := make([]uint32, len(b)/4)
		for j := range u {
			u[j] = binary.NativeEndian.Uint32(b[4*j:])
		}
		if got, want := flowkeys.HashJHash2(&k, r, 5), flowkeys.JHash2(u, 5); got != want {
			t.Fatalf("HashJHash2 over %v = %#x, JHash2 of the same words %#x", r, got, want)
		}
	}
}

func TestSetHashImpl(t *testing.T) {
	orig, hw := flowkeys.HashImpl()
	t.Logf("default implementation %q, hardware CRC32C %v", orig, hw)
	defer flowkeys.SetHashImpl(orig)
	k := randKey(rand.New(rand.NewSource(4)))
	r := flowkeys.Range{Start: 8, End: 17}
	for _, name := range []string{flowkeys.HashImplCRC32C, flowkeys.HashImplJHash2} {
		if err := flowkeys.SetHashImpl(name); err != nil {
			t.Fatal(err)
		}
		if got, _ := flowkeys.HashImpl(); got != name {
			t.Errorf("HashImpl() = %q after SetHashImpl(%q)", got, name)
		}
		want := flowkeys.HashCRC32C(&k, r, 9)
		if name == flowkeys.HashImplJHash2 {
			want = flowkeys.HashJHash2(&k, r, 9)
		}
		if got := flowkeys.Hash(&k, r, 9); got != want {
			t.Errorf("%s: Hash = %#x, want %#x", name, got, want)
		}
	}
	if err := flowkeys.SetHashImpl("md5"); err == nil {
		t.Error("SetHashImpl(md5) succeeded")
	}
}

// fiveTupleMask is the mask of an IPv4 5-tuple flow with in_port.
func fiveTupleMask() flowkeys.Key {
	var m flowkeys.Key
	m.InPort = ^uint32(0)
	m.EthType = 0xffff
	m.IPProto = 0xff
	m.IPv4Src = [4]byte{255, 255, 255, 255}
	m.IPv4Dst = [4]byte{255, 255, 255, 255}
	m.TpSrc, m.TpDst = 0xffff, 0xffff
	return m
}

func TestCRCCollisions(t *testing.T) {
	mask := fiveTupleMask()
	r := mask.Range()
	// The attacker controls source address and ports only.
	var free flowkeys.Key
	free.IPv4Src = [4]byte{255, 255, 255, 255}
	free.TpSrc = 0xffff
	free.TpDst = 0xffff
	base := flowkeystest5Tuple()
	const n = 10000
	keys, err := flowkeys.CRCCollisions(&base, &free, r, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != n {
		t.Fatalf("got %d keys, want %d", len(keys), n)
	}
	seen := make(map[flowkeys.Key]bool, n)
	for i := range keys {
		k := &keys[i]
		if seen[*k] {
			t.Fatalf("key %d is a duplicate", i)
		}
		seen[*k] = true
		// Only free bits changed.
		for w := range k.Words() {
			if (k.Words()[w]^base.Words()[w])&^free.Words()[w] != 0 {
				t.Fatalf("key %d changed word %d outside the free bits", i, w)
			}
		}
	}
	for _, seed := range []uint32{0, 1, 0xdeadbeef, rand.Uint32(), rand.Uint32()} {
		want := flowkeys.HashCRC32C(&keys[0], r, seed)
		if want != stdCRC(&keys[0], r, seed) {
			t.Fatal("HashCRC32C is not the plain CRC32C")
		}
		for i := range keys {
			if got := flowkeys.HashCRC32C(&keys[i], r, seed); got != want {
				t.Fatalf("seed %#x: key %d hashes to %#x, key 0 to %#x", seed, i, got, want)
			}
		}
	}

	// Under the keyed hash the same keys spread like random ones.
	h := flowkeys.NewKeyedHasher()
	const buckets = 1024
	var load [buckets]int
	distinct := map[uint32]bool{}
	for i := range keys {
		v := h.Hash(&keys[i], r, 0)
		distinct[v] = true
		load[v%buckets]++
	}
	maxLoad := 0
	for _, l := range load {
		maxLoad = max(maxLoad, l)
	}
	t.Logf("keyed hash: %d distinct values of %d keys; fullest of %d buckets holds %d (mean %.1f)", len(distinct), n, buckets, maxLoad, float64(n)/buckets)
	// For 10,000 random values in 1024 buckets the fullest bucket holds
	// about 22; 40 would mean the hash is not spreading these keys.
	if maxLoad > 40 || len(distinct) < n-50 {
		t.Errorf("keyed hash does not spread the attack keys: max bucket %d, %d distinct", maxLoad, len(distinct))
	}

	if _, err := flowkeys.CRCCollisions(&base, &free, flowkeys.Range{Start: 8, End: 9}, n); err == nil {
		t.Error("CRCCollisions with too few free bits succeeded")
	}
}

func flowkeystest5Tuple() flowkeys.Key {
	var k flowkeys.Key
	k.InPort = 1
	k.EthType = flowkeys.EthTypeIPv4
	k.IPProto = 6
	k.IPv4Src = [4]byte{192, 0, 2, 1}
	k.IPv4Dst = [4]byte{198, 51, 100, 7}
	k.TpSrc, k.TpDst = 40000, 443
	return k
}

func TestKeyedHasher(t *testing.T) {
	a := flowkeys.NewKeyedHasherFromSecret([]byte("one"))
	b := flowkeys.NewKeyedHasherFromSecret([]byte("two"))
	k := flowkeystest5Tuple()
	r := flowkeys.Range{Start: 8, End: 17}
	if a.Hash(&k, r, 0) != flowkeys.NewKeyedHasherFromSecret([]byte("one")).Hash(&k, r, 0) {
		t.Error("same secret, different hash")
	}
	if a.Hash(&k, r, 0) == b.Hash(&k, r, 0) {
		t.Error("different secrets, same hash")
	}
	if a.Hash(&k, r, 0) == a.Hash(&k, r, 1) {
		t.Error("seed is ignored")
	}
	k2 := k
	k2.TpSrc++
	if a.Hash(&k, r, 0) == a.Hash(&k2, r, 0) {
		t.Error("different keys, same hash")
	}
	// Each output bit flips about half the time when one input bit flips.
	rng := rand.New(rand.NewSource(5))
	var flips [32]int
	const trials = 4000
	for i := 0; i < trials; i++ {
		x := randKey(rng)
		y := x
		w := 8 + rng.Intn(9)
		y.Words()[w] ^= 1 << rng.Intn(64)
		d := a.Hash(&x, r, 0) ^ a.Hash(&y, r, 0)
		for bit := range flips {
			flips[bit] += int(d >> bit & 1)
		}
	}
	for bit, f := range flips {
		if f < trials*4/10 || f > trials*6/10 {
			t.Errorf("output bit %d flipped %d of %d times", bit, f, trials)
		}
	}
}

func TestHashAllocs(t *testing.T) {
	k := flowkeystest5Tuple()
	m := fiveTupleMask()
	h := flowkeys.NewKeyedHasher()
	var sink uint32
	var ok bool
	orig, _ := flowkeys.HashImpl()
	defer flowkeys.SetHashImpl(orig)
	for _, name := range []string{flowkeys.HashImplCRC32C, flowkeys.HashImplJHash2} {
		flowkeys.SetHashImpl(name)
		if n := testing.AllocsPerRun(100, func() { sink += flowkeys.Hash(&k, flowkeys.FullRange, 1) }); n != 0 {
			t.Errorf("Hash (%s) allocates %.1f times", name, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { sink += h.Hash(&k, flowkeys.FullRange, 1) }); n != 0 {
		t.Errorf("HashKeyed allocates %.1f times", n)
	}
	if n := testing.AllocsPerRun(100, func() { ok = flowkeys.EqualMasked(&k, &k, &m, flowkeys.FullRange) }); n != 0 {
		t.Errorf("EqualMasked allocates %.1f times", n)
	}
	var d flowkeys.Key
	if n := testing.AllocsPerRun(100, func() { flowkeys.ApplyMask(&d, &k, &m, flowkeys.FullRange) }); n != 0 {
		t.Errorf("ApplyMask allocates %.1f times", n)
	}
	_, _ = sink, ok
}

// TestHashEnv runs this test binary again with OVSDP_HASH set and checks
// that the child picked the implementation up at start-up.
func TestHashEnv(t *testing.T) {
	if want := os.Getenv("OVSDP_HASH_CHILD_WANT"); want != "" {
		if got, _ := flowkeys.HashImpl(); got != want {
			t.Fatalf("with %s=%q the implementation is %q", flowkeys.HashEnv, os.Getenv(flowkeys.HashEnv), got)
		}
		return
	}
	for _, name := range []string{flowkeys.HashImplJHash2, flowkeys.HashImplCRC32C} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHashEnv$", "-test.count=1")
		cmd.Env = append(os.Environ(), flowkeys.HashEnv+"="+name, "OVSDP_HASH_CHILD_WANT="+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("child with %s=%s: %v\n%s", flowkeys.HashEnv, name, err, out)
		}
	}
}

func TestHashMicroflow(t *testing.T) {
	a := flowkeys.NewKeyedHasherFromSecret([]byte("one"))
	b := flowkeys.NewKeyedHasherFromSecret([]byte("two"))
	k := flowkeystest5Tuple()
	k.EthSrc = [6]byte{2, 0, 0, 0, 0, 1}
	k.EthDst = [6]byte{2, 0, 0, 0, 0, 2}
	h := flowkeys.HashMicroflow(&k, a)
	if h != flowkeys.HashMicroflow(&k, flowkeys.NewKeyedHasherFromSecret([]byte("one"))) {
		t.Error("same secret, different hash")
	}
	if h == flowkeys.HashMicroflow(&k, b) {
		t.Error("different secrets, same hash")
	}
	// Every field it covers changes the hash (with this secret: a
	// collision would be a 2^-32 accident, and the secret is fixed).
	covered := map[string]func(*flowkeys.Key){
		"in_port":   func(k *flowkeys.Key) { k.InPort++ },
		"recirc_id": func(k *flowkeys.Key) { k.RecircID = 7 },
		"eth_type":  func(k *flowkeys.Key) { k.EthType = flowkeys.EthTypeARP },
		"vlan":      func(k *flowkeys.Key) { k.VLANTCI = 0x1005 },
		"eth_src":   func(k *flowkeys.Key) { k.EthSrc[0] ^= 0x80 },
		"eth_src5":  func(k *flowkeys.Key) { k.EthSrc[5] ^= 1 },
		"eth_dst":   func(k *flowkeys.Key) { k.EthDst[3] ^= 1 },
		"eth_dst5":  func(k *flowkeys.Key) { k.EthDst[5] ^= 1 },
		"ip_proto":  func(k *flowkeys.Key) { k.IPProto = 17 },
		"ipv4_src":  func(k *flowkeys.Key) { k.IPv4Src[3]++ },
		"ipv4_dst":  func(k *flowkeys.Key) { k.IPv4Dst[0]++ },
		"tp_src":    func(k *flowkeys.Key) { k.TpSrc++ },
		"tp_dst":    func(k *flowkeys.Key) { k.TpDst++ },
	}
	for name, change := range covered {
		k2 := k
		change(&k2)
		if flowkeys.HashMicroflow(&k2, a) == h {
			t.Errorf("changing %s leaves the hash unchanged", name)
		}
	}
	// Fields outside the microflow identity do not change it: packets
	// of one connection share a cache set whatever their TTL or flags.
	ignored := map[string]func(*flowkeys.Key){
		"ttl":       func(k *flowkeys.Key) { k.IPTTL-- },
		"tcp_flags": func(k *flowkeys.Key) { k.TCPFlags = 0x10 },
		"dp_hash":   func(k *flowkeys.Key) { k.DPHash = 99 },
		"skb_mark":  func(k *flowkeys.Key) { k.SkbMark = 1 },
		"ipv6_src":  func(k *flowkeys.Key) { k.IPv6Src[0] = 1 }, // not an IPv6 key
	}
	for name, change := range ignored {
		k2 := k
		change(&k2)
		if flowkeys.HashMicroflow(&k2, a) != h {
			t.Errorf("changing %s changes the hash", name)
		}
	}
	// An IPv6 key hashes its addresses, all 32 bytes.
	k6 := k
	k6.EthType = flowkeys.EthTypeIPv6
	h6 := flowkeys.HashMicroflow(&k6, a)
	for i := 0; i < 32; i++ {
		k2 := k6
		if i < 16 {
			k2.IPv6Src[i] ^= 1
		} else {
			k2.IPv6Dst[i-16] ^= 1
		}
		if flowkeys.HashMicroflow(&k2, a) == h6 {
			t.Errorf("IPv6 address byte %d does not change the hash", i)
		}
	}
	// Keys that collide under CRC32C over the cache's words (the
	// attack) spread over the hash like any others: no more than a few
	// in one of 1,024 buckets.
	free := flowkeys.Key{TpSrc: 0xffff, TpDst: 0xffff, IPv4Src: [4]byte{255, 255, 255, 255}, IPv4Dst: [4]byte{255, 255, 255, 255}}
	keys, err := flowkeys.CRCCollisions(&k, &free, flowkeys.Range{Start: 8, End: 17}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	buckets := map[uint32]int{}
	most := 0
	for i := range keys {
		x := flowkeys.HashMicroflow(&keys[i], a) & 1023
		buckets[x]++
		most = max(most, buckets[x])
	}
	if most > 8 {
		t.Errorf("1,000 CRC-colliding keys: %d in one of 1,024 buckets", most)
	}
	if n := testing.AllocsPerRun(100, func() { h ^= flowkeys.HashMicroflow(&k, a) }); n != 0 {
		t.Errorf("HashMicroflow allocates %.1f times", n)
	}
}

// TestHashKeyedMasked: the fused masked hash is HashKeyed of the masked
// copy for every range of random keys and masks, and does not allocate.
func TestHashKeyedMasked(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	h := flowkeys.NewKeyedHasherFromSecret([]byte("masked"))
	var k, m, masked flowkeys.Key
	for trial := 0; trial < 2000; trial++ {
		kw, mw := k.Words(), m.Words()
		for i := range kw {
			kw[i] = rng.Uint64()
			mw[i] = rng.Uint64() & rng.Uint64()
		}
		start := rng.Intn(flowkeys.KeyWords)
		r := flowkeys.Range{Start: start, End: start + 1 + rng.Intn(flowkeys.KeyWords-start)}
		masked = flowkeys.Key{}
		flowkeys.ApplyMask(&masked, &k, &m, r)
		seed := rng.Uint32()
		if got, want := flowkeys.HashKeyedMasked(&k, &m, r, h, seed), flowkeys.HashKeyed(&masked, r, h, seed); got != want {
			t.Fatalf("range %v: HashKeyedMasked %#x, HashKeyed of the masked copy %#x", r, got, want)
		}
	}
	var sink uint32
	if n := testing.AllocsPerRun(100, func() { sink += flowkeys.HashKeyedMasked(&k, &m, flowkeys.FullRange, h, 1) }); n != 0 {
		t.Errorf("HashKeyedMasked allocates %.1f times", n)
	}
	_ = sink
}
