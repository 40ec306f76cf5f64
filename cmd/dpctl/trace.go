package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/flowkeys"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "show which installed flow a packet would hit and what its actions would do to it",
		Description: "PACKET is a flow in the flow syntax (exact: in_port(1),eth(src=...,dst=...),eth_type(0x0800),ipv4(...),udp(...))\n" +
			"or the packet's bytes in hex (with --in-port). The key is extracted as the kernel would,\n" +
			"matched against the datapath's flows with the masked comparator, and the flow's actions\n" +
			"run on the packet in a userspace copy of the datapath: the resulting packets are printed\n" +
			"per output port. A packet no flow matches prints \"miss: would go to upcall\".",
		ArgsUsage: "[DP] PACKET",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "in-port", Usage: "the port (number or name) a hex PACKET comes in on"},
		},
		Action: action(cmdTrace),
	}
}

// traceOutput is one packet the actions sent to a port.
type traceOutput struct {
	Port   uint32 `json:"port"`
	Name   string `json:"name,omitempty"`
	Packet string `json:"packet"`
	Key    string `json:"key"`
}

// traceUpcall is a userspace action's upcall.
type traceUpcall struct {
	Port     uint32 `json:"port"`
	Userdata string `json:"userdata,omitempty"`
	Packet   string `json:"packet"`
}

// traceResult is what trace found, in its JSON form.
type traceResult struct {
	Packet  string        `json:"packet"`
	Key     string        `json:"key"`
	Note    string        `json:"note,omitempty"`
	Miss    bool          `json:"miss"`
	Flow    *flowJSON     `json:"flow,omitempty"`
	Also    []flowJSON    `json:"also_matching,omitempty"`
	Outputs []traceOutput `json:"outputs,omitempty"`
	Upcalls []traceUpcall `json:"upcalls,omitempty"`
	// Dropped is true when the actions sent the packet nowhere.
	Dropped bool `json:"dropped,omitempty"`
	// NotExecuted says why the actions could not be run in userspace.
	NotExecuted string `json:"not_executed,omitempty"`
	// Skipped counts the installed flows that could not be compared
	// (keys flowkeys.Key cannot hold).
	Skipped int `json:"skipped_flows,omitempty"`
}

// parseHexPacket reads a packet written in hex (blanks, colons and a
// 0x prefix allowed); ok is false when s is not hex at all.
func parseHexPacket(s string) (b []byte, ok bool, err error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	t = strings.NewReplacer(" ", "", ":", "", "\t", "", "\n", "").Replace(t)
	if t == "" {
		return nil, false, nil
	}
	for _, r := range t {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return nil, false, nil
		}
	}
	b, err = hex.DecodeString(t)
	if err != nil {
		return nil, true, fmt.Errorf("packet: %w", err)
	}
	if len(b) < 14 {
		return nil, true, fmt.Errorf("packet: %d bytes is shorter than an Ethernet header", len(b))
	}
	return b, true, nil
}

// tracePacket turns trace's PACKET argument into bytes and metadata.
func tracePacket(e *env, dp odp.Datapath, s string) ([]byte, flowkeys.Metadata, *flowkeys.Key, error) {
	var md flowkeys.Metadata
	b, isHex, err := parseHexPacket(s)
	if err != nil {
		return nil, md, nil, err
	}
	if isHex {
		p := e.c.String("in-port")
		if p == "" {
			return nil, md, nil, errors.New("a packet in hex needs --in-port PORT")
		}
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			num, ok := portNumbers(e, dp)(p)
			if !ok {
				return nil, md, nil, fmt.Errorf("--in-port %q: no port has this name", p)
			}
			n = uint64(num)
		}
		md.InPort = uint32(n)
		return b, md, nil, nil
	}
	if e.c.IsSet("in-port") {
		return nil, md, nil, errors.New("--in-port is for a packet in hex; a flow gives in_port(N)")
	}
	key, _, err := odp.ParseMaskedKeyWith(s, portNumbers(e, dp))
	if err != nil {
		return nil, md, nil, fmt.Errorf("parsing the packet as a flow: %w", err)
	}
	if key.Find(odp.KeyInPort) == nil {
		return nil, md, nil, errors.New("the packet's flow needs in_port(N)")
	}
	k, err := odp.ToFlowKeysExact(key)
	if err != nil {
		return nil, md, nil, fmt.Errorf("the packet's flow: %w", err)
	}
	b, err = composePacket(&k)
	if err != nil {
		return nil, md, nil, err
	}
	md = flowkeys.Metadata{InPort: k.InPort, Priority: k.Priority, SkbMark: k.SkbMark, RecircID: k.RecircID, DPHash: k.DPHash,
		CTState: k.CTState, CTOrigProto: k.CTOrigProto, CTZone: k.CTZone, CTMark: k.CTMark, CTLabels: k.CTLabels,
		CTOrigIPv4Src: k.CTOrigIPv4Src, CTOrigIPv4Dst: k.CTOrigIPv4Dst, CTOrigIPv6Src: k.CTOrigIPv6Src,
		CTOrigIPv6Dst: k.CTOrigIPv6Dst, CTOrigTpSrc: k.CTOrigTpSrc, CTOrigTpDst: k.CTOrigTpDst}
	return b, md, &k, nil
}

// metadataKey is the execute key of a packet with metadata md.
func metadataKey(md *flowkeys.Metadata) odp.FlowKey {
	k := odp.FlowKey{odp.InPort(md.InPort)}
	if md.Priority != 0 {
		k = append(k, odp.Priority(md.Priority))
	}
	if md.SkbMark != 0 {
		k = append(k, odp.SkbMark(md.SkbMark))
	}
	if md.RecircID != 0 {
		k = append(k, odp.RecircID(md.RecircID))
	}
	if md.DPHash != 0 {
		k = append(k, odp.DPHash(md.DPHash))
	}
	return k
}

func cmdTrace(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 2, 1, 1, "trace [DP] PACKET")
	if err != nil {
		return err
	}
	defer dp.Close()
	pkt, md, given, err := tracePacket(e, dp, args[0])
	if err != nil {
		return err
	}
	var pk flowkeys.Key
	if err := flowkeys.Extract(pkt, &md, &pk); err != nil {
		return fmt.Errorf("extracting the packet's key: %w", err)
	}
	opts := formatOptions(e, dp)
	r := traceResult{Packet: hex.EncodeToString(pkt), Key: odp.FormatKeyWith(odp.KeyFromFlowKeys(&pk), nil, opts)}
	if given != nil && *given != pk {
		r.Note = "the packet built from the flow extracts to a different key (the flow has fields no packet carries, or contradicts itself)"
	}
	var flows []*odp.Flow
	if err := dp.DumpFlows(e.ctx, odp.DumpOptions{}, func(f *odp.Flow) error {
		flows = append(flows, f)
		return nil
	}); err != nil {
		return fmt.Errorf("trace: dumping flows: %w", err)
	}
	var hit *odp.Flow
	for _, f := range flows {
		fk, fm, err := odp.ToFlowKeys(f.Key, f.Mask)
		if err != nil {
			r.Skipped++
			continue
		}
		if !flowkeys.EqualMasked(&pk, &fk, &fm, flowkeys.FullRange) {
			continue
		}
		if hit == nil {
			hit = f
			j := toFlowJSON(f, opts)
			r.Flow = &j
		} else {
			r.Also = append(r.Also, toFlowJSON(f, opts))
		}
	}
	if hit == nil {
		r.Miss = true
	} else if err := simulate(e, dp, flows, hit, pkt, &md, &r, opts); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	printTrace(e, &r)
	return nil
}

// printTrace writes trace's text form.
func printTrace(e *env, r *traceResult) {
	var b strings.Builder
	fmt.Fprintf(&b, "packet: %d bytes: %s\n", len(r.Packet)/2, r.Packet)
	fmt.Fprintf(&b, "key: %s\n", r.Key)
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, "note: %d installed flows could not be compared\n", r.Skipped)
	}
	if r.Miss {
		b.WriteString("miss: would go to upcall\n")
		e.out.Write([]byte(b.String()))
		return
	}
	flowLine := func(j *flowJSON) string {
		s := j.Match
		if j.UFID != "" {
			s = "ufid:" + j.UFID + ", " + s
		}
		return s + ", actions:" + j.Actions
	}
	fmt.Fprintf(&b, "flow: %s\n", flowLine(r.Flow))
	for i := range r.Also {
		fmt.Fprintf(&b, "also matches (overlapping megaflow): %s\n", flowLine(&r.Also[i]))
	}
	switch {
	case r.NotExecuted != "":
		fmt.Fprintf(&b, "actions: not executable in userspace: %s\n", r.NotExecuted)
	case r.Dropped:
		b.WriteString("result: dropped\n")
	}
	for _, o := range r.Outputs {
		name := ""
		if o.Name != "" {
			name = " (" + o.Name + ")"
		}
		fmt.Fprintf(&b, "output to port %d%s: %d bytes: %s\n  key: %s\n", o.Port, name, len(o.Packet)/2, o.Packet, o.Key)
	}
	for _, u := range r.Upcalls {
		fmt.Fprintf(&b, "upcall (userspace action) from port %d, userdata %q: %d bytes: %s\n", u.Port, u.Userdata, len(u.Packet)/2, u.Packet)
	}
	e.out.Write([]byte(b.String()))
}

// simulate runs the hit flow's actions on the packet in a userspace
// datapath with the same port numbers (ports that record what they are
// sent) and the installed flows (for recirculations), and records the
// packets that come out.
func simulate(e *env, dp odp.Datapath, flows []*odp.Flow, hit *odp.Flow, pkt []byte, md *flowkeys.Metadata, r *traceResult, opts odp.FormatOptions) error {
	sim, err := userdp.New(dp.Name(), userdp.WithoutLocalPort(), userdp.WithRebalanceInterval(0))
	if err != nil {
		return fmt.Errorf("trace: simulation datapath: %w", err)
	}
	defer sim.Close()
	ports, err := dp.Ports(e.ctx)
	if err != nil {
		return fmt.Errorf("trace: listing ports: %w", err)
	}
	names := map[uint32]string{}
	rec := &recorder{}
	for _, p := range ports {
		names[p.Number] = p.Name
		typ := odp.PortNetdev
		if p.Number == 0 {
			typ = odp.PortInternal
		}
		name := p.Name
		if p.Number == 0 {
			name = dp.Name() // userdp's local port is named after the datapath
		}
		if _, err := sim.AttachPort(&recordPort{name: name, typ: typ, number: p.Number, rec: rec, done: make(chan struct{})}, p.Number); err != nil {
			return fmt.Errorf("trace: simulation port %s: %w", p.Name, err)
		}
	}
	for _, f := range flows {
		if f != hit {
			_, _ = sim.PutFlow(e.ctx, f, odp.PutCreate) // for recirculation; flows it can't run stay out
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	rcv, err := sim.Upcalls(ctx, 1)
	if err != nil {
		return fmt.Errorf("trace: simulation upcalls: %w", err)
	}
	if err := sim.Execute(e.ctx, &odp.Packet{Data: pkt, Key: metadataKey(md), Actions: hit.Actions}); err != nil {
		r.NotExecuted = errorMessage(err)
		return nil
	}
	for _, o := range rec.take() {
		var k flowkeys.Key
		omd := flowkeys.Metadata{InPort: o.port}
		text := ""
		if err := flowkeys.Extract(o.data, &omd, &k); err == nil {
			text = odp.FormatKeyWith(odp.KeyFromFlowKeys(&k), nil, opts)
		}
		r.Outputs = append(r.Outputs, traceOutput{Port: o.port, Name: names[o.port], Packet: hex.EncodeToString(o.data), Key: text})
	}
	ups := make([]odp.Upcall, 16)
	for {
		uctx, ucancel := context.WithTimeout(ctx, 20*time.Millisecond)
		n, err := rcv[0].Recv(uctx, ups)
		ucancel()
		if err != nil || n == 0 {
			break
		}
		for _, u := range ups[:n] {
			r.Upcalls = append(r.Upcalls, traceUpcall{Port: u.Port, Userdata: hex.EncodeToString(u.Userdata), Packet: hex.EncodeToString(u.Packet)})
		}
	}
	r.Dropped = len(r.Outputs) == 0 && len(r.Upcalls) == 0
	return nil
}

// recorded is one packet sent to a simulation port.
type recorded struct {
	port uint32
	data []byte
}

// recorder collects the packets sent to the simulation's ports, in order.
type recorder struct {
	mu   sync.Mutex
	pkts []recorded
}

func (r *recorder) take() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pkts
	r.pkts = nil
	return p
}

// recordPort is a userdp.Port that receives nothing and records what it
// is sent.
type recordPort struct {
	name   string
	typ    odp.PortType
	number uint32
	rec    *recorder
	once   sync.Once
	done   chan struct{}
}

func (p *recordPort) Name() string         { return p.name }
func (p *recordPort) Type() odp.PortType   { return p.typ }
func (p *recordPort) MTU() int             { return 65535 }
func (p *recordPort) Stats() odp.PortStats { return odp.PortStats{} }
func (p *recordPort) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *recordPort) ReadBatch(bufs [][]byte, sizes []int, offset int) (int, error) {
	<-p.done
	return 0, userdp.ErrPortClosed
}

func (p *recordPort) WriteBatch(pkts [][]byte) (int, error) {
	p.rec.mu.Lock()
	defer p.rec.mu.Unlock()
	for _, b := range pkts {
		p.rec.pkts = append(p.rec.pkts, recorded{port: p.number, data: append([]byte(nil), b...)})
	}
	return len(pkts), nil
}
