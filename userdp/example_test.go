package userdp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ovsdp/ovsdp/flowkeys/flowkeystest"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

// An in-memory userspace datapath with two ports: a flow that rewrites
// the TTL and forwards from port 1 to port 2, a frame pushed through it,
// and a frame that misses and comes up as an upcall. Memory ports need no
// privileges; netdev, internal and tap ports (Linux) take the same calls.
func Example() {
	ctx := context.Background()
	dp, err := userdp.New("example", userdp.WithoutLocalPort())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dp.Close()
	for _, name := range []string{"m1", "m2"} {
		p, err := dp.AddPort(ctx, odp.PortSpec{Name: name, Type: userdp.PortMemory})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("port %d: %s (%s)\n", p.Number, p.Name, p.Type)
	}
	// The far ends of the ports' pipes: what we write to in1 arrives on
	// port 1; what the datapath sends to port 2 is read from out2.
	in1, out2 := dp.MemoryPeer("m1"), dp.MemoryPeer("m2")

	key, mask, err := odp.ParseMaskedKey("in_port(1),eth(),eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=53)")
	if err != nil {
		fmt.Println(err)
		return
	}
	acts, err := odp.ParseActions("set(ipv4(ttl=63)),2")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := dp.PutFlow(ctx, &odp.Flow{Key: key, Mask: mask, Actions: acts}, odp.PutCreate); err != nil {
		fmt.Println(err)
		return
	}

	udp := append(flowkeystest.Eth(0x0800), flowkeystest.IPv4(flowkeystest.IPv4Opts{Proto: 17, TTL: 64}, flowkeystest.UDP(1234, 53, []byte("query")))...)
	if _, err := in1.WriteBatch([][]byte{udp}); err != nil {
		fmt.Println(err)
		return
	}
	bufs, sizes := [][]byte{make([]byte, userdp.BufferSize(1500))}, []int{0}
	done := make(chan error, 1)
	go func() {
		_, err := out2.ReadBatch(bufs, sizes, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			fmt.Println(err)
			return
		}
	case <-time.After(5 * time.Second):
		fmt.Println("nothing came out of port 2")
		return
	}
	out := bufs[0][:sizes[0]]
	fmt.Printf("port 2 sent %d bytes, TTL %d (was %d), payload %q\n", len(out), out[14+8], udp[14+8], out[len(out)-5:])

	// A frame no flow matches is a miss: it goes to the upcall handlers.
	rs, err := dp.Upcalls(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	arp := append(flowkeystest.Eth(0x0806), flowkeystest.ARP(1, 0x0800, 6, 4, 1)...)
	if _, err := in1.WriteBatch([][]byte{arp}); err != nil {
		fmt.Println(err)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ups := make([]odp.Upcall, 1)
	if _, err := rs[0].Recv(rctx, ups); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on port %d: %s\n", ups[0].Kind, ups[0].Port, odp.FormatKey(ups[0].Key, nil, true))

	f, err := dp.GetFlow(ctx, odp.FlowID{Key: key})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("flow: %d packet, %d bytes\n", f.Stats.Packets, f.Stats.Bytes)
	// Output:
	// port 1: m1 (memory)
	// port 2: m2 (memory)
	// port 2 sent 47 bytes, TTL 63 (was 64), payload "query"
	// miss on port 1: recirc_id(0),dp_hash(0),skb_priority(0),in_port(1),skb_mark(0),ct_state(0),ct_zone(0),ct_mark(0),ct_label(0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0806),arp(sip=166.167.168.169,tip=176.177.178.179,op=1,sha=a0:a1:a2:a3:a4:a5,tha=aa:ab:ac:ad:ae:af)
	// flow: 1 packet, 47 bytes
}
