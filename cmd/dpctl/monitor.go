package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

func monitorCommand() *cli.Command {
	return &cli.Command{
		Name:  "monitor",
		Usage: "print the upcalls of DP as they come (MISS upcall[SEQ/yes]: KEY, port and packet)",
		Description: "Where upcalld serves the datapath, the upcalls come from it (a subscription on its\n" +
			"status socket); otherwise dpctl registers its own upcall socket with a kernel datapath.\n" +
			"With --pcap FILE (- for standard output, the text then going to standard error) the\n" +
			"packets are also written as pcapng: one interface per port, the flow key as each\n" +
			"packet's comment. With --packet-ins it prints, instead of the upcalls, upcalld's\n" +
			"packet-ins (the upcalls of its rules' controller actions, within its --packet-in-rate):\n" +
			"PACKET_IN[SEQ/yes]: KEY port P: PACKET userdata(HEX). An action upcall of\n" +
			"userspace(tunnel_out_port=P) ends with egress_tun_key(tunnel(...)), the egress tunnel key.",
		ArgsUsage: "[DP]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "pcap", Usage: "also write the packets to `FILE` (pcapng; - for standard output)"},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` upcalls (0: run until interrupted)"},
			&cli.BoolFlag{Name: "packet-ins", Usage: "print upcalld's packet-ins (controller actions) instead of the upcalls"},
		},
		Action: action(cmdMonitor),
	}
}

// monitored is an upcall as monitor shows it.
type monitored struct {
	seq      uint64
	kind     odp.UpcallKind
	port     uint32
	key      odp.FlowKey
	packet   []byte
	userdata []byte
	// egress is a userspace(tunnel_out_port) upcall's egress tunnel
	// key, or nil.
	egress  *odp.Tunnel
	time    time.Time
	dropped uint64
	// packetIn marks a packet-in; limited counts those upcalld's rate
	// limit dropped before it.
	packetIn bool
	limited  uint64
}

// upcallSource yields upcalls until ctx ends.
type upcallSource interface {
	next(ctx context.Context) (monitored, error)
	close() error
}

func cmdMonitor(e *env, args []string) error {
	dp, args, err := openDPArgs(e, args, 1, 0, 0, "monitor")
	if err != nil {
		return err
	}
	defer dp.Close()
	src, how, err := openUpcallSource(e.ctx, dp, e.c.Bool("read-only"), e.c.Bool("packet-ins"))
	if err != nil {
		return err
	}
	defer src.close()
	out := e.out
	var pw *pcapWriter
	if p := e.c.String("pcap"); p != "" {
		var w io.Writer
		if p == "-" {
			w, out = e.out, e.c.App.ErrWriter
		} else {
			f, err := os.Create(p)
			if err != nil {
				return fmt.Errorf("monitor: --pcap: %w", err)
			}
			defer f.Close()
			w = f
		}
		pw = &pcapWriter{w: w, ifaces: map[uint32]int{}}
		defer pw.flush()
	}
	fmt.Fprintf(e.c.App.ErrWriter, "dpctl: monitoring %s@%s (%s)\n", dp.Type(), dp.Name(), how)
	opts := formatOptions(e, dp)
	names, _ := portMaps(e, dp)
	count := e.c.Int("count")
	bw := bufio.NewWriter(out)
	for n := 0; count <= 0 || n < count; n++ {
		m, err := src.next(e.ctx)
		if err != nil {
			bw.Flush()
			if e.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("monitor: %w", err)
		}
		if _, ok := names[m.port]; !ok {
			e.portName = nil // a new port: read the ports again
			names, _ = portMaps(e, dp)
		}
		keyText := odp.FormatKeyWith(m.key, nil, opts)
		what := "upcalls"
		if m.packetIn {
			what = "packet-ins"
		}
		if m.dropped > 0 {
			fmt.Fprintf(bw, "(%d %s dropped: monitor read too slowly)\n", m.dropped, what)
		}
		if m.limited > 0 {
			fmt.Fprintf(bw, "(%d packet-ins dropped by upcalld's rate limit)\n", m.limited)
		}
		bw.WriteString(monitorLine(m, keyText, names[m.port]))
		bw.WriteByte('\n')
		bw.Flush()
		if pw != nil {
			if err := pw.write(m, names[m.port], keyText); err != nil {
				return fmt.Errorf("monitor: writing pcapng: %w", err)
			}
		}
	}
	return nil
}

// monitorLine formats one upcall in the kernel selftest tool's form
// (ovs-dpctl.py: "MISS upcall[SEQ/yes]: KEY"), followed by the port and
// a summary of the packet; a packet-in is "PACKET_IN[SEQ/yes]: ...".
func monitorLine(m monitored, keyText, portName string) string {
	kind := "MISS upcall"
	switch {
	case m.packetIn:
		kind = "PACKET_IN"
	case m.kind == odp.UpcallAction:
		kind = "ACTION upcall"
	}
	pres := "yes"
	if m.packet == nil {
		pres = "no"
	}
	s := fmt.Sprintf("%s[%d/%s]: %s", kind, m.seq, pres, keyText)
	port := fmt.Sprint(m.port)
	if portName != "" {
		port = portName + "(" + port + ")"
	}
	s += " port " + port + ": " + packetSummary(m.packet)
	if m.kind == odp.UpcallAction {
		s += " userdata(" + hex.EncodeToString(m.userdata) + ")"
	}
	if m.egress != nil {
		s += " egress_tun_key(" + odp.FormatKey(odp.FlowKey{*m.egress}, nil, false) + ")"
	}
	return s
}

// packetSummary describes a packet in a few words: protocol, addresses
// and ports, length.
func packetSummary(b []byte) string {
	if b == nil {
		return "no packet"
	}
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	var what string
	switch {
	case p.Layer(layers.LayerTypeARP) != nil:
		a := p.Layer(layers.LayerTypeARP).(*layers.ARP)
		op := "reply"
		if a.Operation == 1 {
			op = "request"
		}
		what = fmt.Sprintf("ARP %s %v > %v", op, net.IP(a.SourceProtAddress), net.IP(a.DstProtAddress))
	case p.NetworkLayer() != nil:
		nf := p.NetworkLayer().NetworkFlow()
		proto := p.NetworkLayer().LayerType().String()
		if t := p.TransportLayer(); t != nil {
			tf := t.TransportFlow()
			what = fmt.Sprintf("%s %v:%v > %v:%v", t.LayerType(), nf.Src(), tf.Src(), nf.Dst(), tf.Dst())
		} else {
			for _, l := range p.Layers() {
				if l.LayerType() == layers.LayerTypeICMPv4 || l.LayerType() == layers.LayerTypeICMPv6 {
					proto = l.LayerType().String()
				}
			}
			what = fmt.Sprintf("%s %v > %v", proto, nf.Src(), nf.Dst())
		}
	case p.LinkLayer() != nil:
		lf := p.LinkLayer().LinkFlow()
		what = fmt.Sprintf("Ethernet %v > %v", lf.Src(), lf.Dst())
		if len(b) >= 14 {
			what += fmt.Sprintf(" type 0x%04x", binary.BigEndian.Uint16(b[12:14]))
		}
	default:
		what = "?"
	}
	return fmt.Sprintf("%s, %d bytes", what, len(b))
}

// openUpcallSource subscribes to upcalld's stream where upcalld serves
// the datapath, and otherwise (a kernel datapath) opens dpctl's own
// upcall socket, which points the datapath's upcalls at it (refused with
// --read-only); how says which. With packetIns it subscribes to
// upcalld's packet-ins, which only upcalld has.
func openUpcallSource(ctx context.Context, dp odp.Datapath, readOnly, packetIns bool) (upcallSource, string, error) {
	path := ctl.StatusSocket(dp.Type(), dp.Name())
	if c, err := net.Dial("unix", path); err == nil {
		line, what := statusaddr.SubscribeUpcalls, "upcalls"
		if packetIns {
			line, what = statusaddr.SubscribePacketIns, "packet-ins"
		}
		s, err := subscribe(c, line)
		if err != nil {
			c.Close()
			return nil, "", fmt.Errorf("monitor: subscribing to upcalld's %s on %s: %w", what, path, err)
		}
		s.packetIns = packetIns
		return s, what + " from upcalld on " + path, nil
	} else if packetIns {
		return nil, "", fmt.Errorf("monitor --packet-ins: no upcalld answers on %s (packet-ins come from upcalld's rules): %w", path, err)
	}
	if dp.Type() != "system" {
		return nil, "", fmt.Errorf("monitor: no upcalld answers on %s, and the upcalls of %s@%s can only come from the process hosting it", path, dp.Type(), dp.Name())
	}
	if readOnly {
		return nil, "", fmt.Errorf("monitor: no upcalld serves %s@%s, and taking its upcalls changes the datapath (its upcall sockets): not in read only mode", dp.Type(), dp.Name())
	}
	rxs, err := dp.Upcalls(ctx, 1)
	if err != nil {
		return nil, "", fmt.Errorf("monitor: registering an upcall socket: %w", err)
	}
	return &ownSource{rx: rxs[0], ups: make([]odp.Upcall, 32)}, "dpctl's own upcall socket: the datapath's upcalls now come here", nil
}

// subSource reads upcalld's subscription stream.
type subSource struct {
	c         net.Conn
	dec       *json.Decoder
	packetIns bool
}

// subscribe writes line (statusaddr.SubscribeUpcalls or
// SubscribePacketIns) on c and reads the status that comes first.
func subscribe(c net.Conn, line string) (*subSource, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bufio.NewReader(c))
	var status map[string]any
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := dec.Decode(&status); err != nil {
		return nil, fmt.Errorf("reading the status: %w", err)
	}
	if msg, _ := status["error"].(string); msg != "" {
		// upcalld refused this peer (its status socket's access check).
		return nil, fmt.Errorf("upcalld: %s", msg)
	}
	c.SetReadDeadline(time.Time{})
	return &subSource{c: c, dec: dec}, nil
}

func (s *subSource) next(ctx context.Context) (monitored, error) {
	stop := context.AfterFunc(ctx, func() { s.c.SetReadDeadline(time.Now()) })
	defer stop()
	var ev statusaddr.Upcall
	var raw json.RawMessage
	if err := s.dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return monitored{}, errors.New("upcalld closed the subscription")
		}
		return monitored{}, err
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return monitored{}, fmt.Errorf("bad upcall from upcalld: %w", err)
	}
	if ev.Seq == 0 {
		var e struct{ Error string }
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return monitored{}, fmt.Errorf("upcalld: %s", e.Error)
		}
	}
	key, err := odp.UnmarshalKey(ev.Key)
	if err != nil {
		return monitored{}, fmt.Errorf("upcall %d: key: %w", ev.Seq, err)
	}
	egress, err := egressTunKey(ev.EgressTunKey)
	if err != nil {
		return monitored{}, fmt.Errorf("upcall %d: egress_tun_key: %w", ev.Seq, err)
	}
	return monitored{seq: ev.Seq, kind: odp.UpcallKind(ev.Kind), port: ev.Port, key: key, packet: ev.Packet,
		userdata: ev.Userdata, egress: egress, time: time.Unix(0, ev.TimeNS), dropped: ev.Dropped, packetIn: s.packetIns, limited: ev.RateLimited}, nil
}

// egressTunKey decodes statusaddr.Upcall.EgressTunKey: nil for none,
// else a flow key of exactly one tunnel attribute.
func egressTunKey(b []byte) (*odp.Tunnel, error) {
	if len(b) == 0 {
		return nil, nil
	}
	k, err := odp.UnmarshalKey(b)
	if err != nil {
		return nil, err
	}
	if len(k) != 1 {
		return nil, fmt.Errorf("%d attributes (%s), want one tunnel attribute", len(k), odp.FormatKey(k, nil, false))
	}
	t, ok := k[0].(odp.Tunnel)
	if !ok {
		return nil, fmt.Errorf("%s is not a tunnel attribute", odp.FormatKey(k, nil, false))
	}
	return &t, nil
}

func (s *subSource) close() error { return s.c.Close() }

// ownSource reads dpctl's own upcall socket.
type ownSource struct {
	rx   odp.UpcallReceiver
	ups  []odp.Upcall
	n, i int
	seq  uint64
}

func (s *ownSource) next(ctx context.Context) (monitored, error) {
	for s.i >= s.n {
		n, err := s.rx.Recv(ctx, s.ups)
		if err != nil && n == 0 {
			return monitored{}, err
		}
		s.n, s.i = n, 0
	}
	u := s.ups[s.i]
	s.i++
	s.seq++
	return monitored{seq: s.seq, kind: u.Kind, port: u.Port, key: u.Key, packet: u.Packet, userdata: u.Userdata, egress: u.EgressTunnel, time: time.Now()}, nil
}

func (s *ownSource) close() error { return s.rx.Close() }

// pcapWriter writes monitor's packets as pcapng: gopacket's NgWriter for
// the section and one interface per port, and the enhanced packet blocks
// written here, since NgWriter has no packet comments.
type pcapWriter struct {
	w      io.Writer
	ng     *pcapgo.NgWriter
	ifaces map[uint32]int
	buf    []byte
}

func (p *pcapWriter) iface(port uint32, name string) (int, error) {
	if id, ok := p.ifaces[port]; ok {
		return id, nil
	}
	if name == "" {
		name = fmt.Sprintf("port%d", port)
	}
	intf := pcapgo.NgInterface{Name: name, Description: fmt.Sprintf("datapath port %d", port), LinkType: layers.LinkTypeEthernet, SnapLength: 0}
	var id int
	if p.ng == nil {
		ng, err := pcapgo.NewNgWriterInterface(p.w, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "dpctl monitor"}})
		if err != nil {
			return 0, err
		}
		p.ng = ng
	} else {
		var err error
		if id, err = p.ng.AddInterface(intf); err != nil {
			return 0, err
		}
	}
	if err := p.ng.Flush(); err != nil {
		return 0, err
	}
	p.ifaces[port] = id
	return id, nil
}

// write appends one enhanced packet block with the key as its comment.
func (p *pcapWriter) write(m monitored, portName, comment string) error {
	id, err := p.iface(m.port, portName)
	if err != nil {
		return err
	}
	pad := func(n int) int { return (4 - n&3) & 3 }
	data := m.packet
	optLen := 4 + len(comment) + pad(len(comment)) + 4 // comment, end of options
	total := 28 + len(data) + pad(len(data)) + optLen + 4
	b := p.buf[:0]
	le := binary.LittleEndian
	ts := uint64(m.time.UnixNano())
	b = le.AppendUint32(b, 6) // enhanced packet block
	b = le.AppendUint32(b, uint32(total))
	b = le.AppendUint32(b, uint32(id))
	b = le.AppendUint32(b, uint32(ts>>32))
	b = le.AppendUint32(b, uint32(ts))
	b = le.AppendUint32(b, uint32(len(data)))
	b = le.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	b = append(b, make([]byte, pad(len(data)))...)
	b = le.AppendUint16(b, 1) // opt_comment
	b = le.AppendUint16(b, uint16(len(comment)))
	b = append(b, comment...)
	b = append(b, make([]byte, pad(len(comment)))...)
	b = le.AppendUint32(b, 0) // opt_endofopt
	b = le.AppendUint32(b, uint32(total))
	p.buf = b
	_, err = p.w.Write(b)
	return err
}

func (p *pcapWriter) flush() {
	if p.ng != nil {
		p.ng.Flush()
	}
	if f, ok := p.w.(interface{ Sync() error }); ok {
		f.Sync()
	}
}
