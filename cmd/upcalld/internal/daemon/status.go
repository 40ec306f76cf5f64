package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ovsdp/ovsdp/internal/runsock"
)

// Status is what `upcalld status` shows.
type Status struct {
	Datapath      string   `json:"datapath"`
	UpcallMode    string   `json:"upcall_mode"`
	Handlers      int      `json:"handlers"`
	Policy        string   `json:"policy"`
	PolicyGen     uint64   `json:"policy_generation"`
	Ports         []uint32 `json:"ports"`
	Flows         int      `json:"flows"`
	DatapathFlows uint64   `json:"datapath_flows"`
	FlowLimit     int      `json:"flow_limit"`
	MaxFlowLimit  int      `json:"max_flow_limit"`
	IdleTimeout   string   `json:"idle_timeout"`
	Revalidations uint64   `json:"revalidations"`
	LastDump      string   `json:"last_dump_duration"`
	Handled       uint64   `json:"upcalls_handled"`
	Failed        uint64   `json:"upcalls_failed"`
	Shed          uint64   `json:"upcalls_shed"`
	Controller    uint64   `json:"controller_upcalls"`
	PacketIns     uint64   `json:"packet_ins_sent"`
	PacketInDrops uint64   `json:"packet_ins_dropped"`
	Lost          uint64   `json:"upcalls_lost"`
	Installed     uint64   `json:"flows_installed"`
	MACs          int      `json:"mac_entries"`
	LatencyP50    string   `json:"handler_latency_p50"`
	LatencyP99    string   `json:"handler_latency_p99"`
	Uptime        string   `json:"uptime"`
	UptimeSeconds float64  `json:"uptime_seconds"`
}

// Status returns the daemon's current status.
func (d *Daemon) Status() Status {
	d.recvMu.Lock()
	nh := len(d.receivers)
	d.recvMu.Unlock()
	ps := d.pol.Load()
	up := time.Since(d.started)
	return Status{
		Datapath:      d.dp.Type() + "@" + d.dp.Name(),
		UpcallMode:    d.mode.Load().(string),
		Handlers:      nh,
		Policy:        d.policyName(),
		PolicyGen:     ps.gen,
		Ports:         ps.env.Ports,
		Flows:         d.flows.len(),
		DatapathFlows: d.dpFlows.Load(),
		FlowLimit:     int(d.flowLimit.Load()),
		MaxFlowLimit:  int(d.maxLimit),
		IdleTimeout:   d.cfg.IdleTimeout.String(),
		Revalidations: d.passes.Load(),
		LastDump:      time.Duration(d.lastDump.Load()).String(),
		Handled:       d.handled.Load(),
		Failed:        d.failed.Load(),
		Shed:          d.shed.Load(),
		Controller:    d.ctrl.Load(),
		PacketIns:     d.pins.sent.Load(),
		PacketInDrops: d.pins.dropped.Load(),
		Lost:          d.lost.Load(),
		Installed:     d.installed.Load(),
		MACs:          d.sw.Stats().Entries,
		LatencyP50:    d.lat.Quantile(0.5).String(),
		LatencyP99:    d.lat.Quantile(0.99).String(),
		Uptime:        up.Round(time.Second).String(),
		UptimeSeconds: up.Seconds(),
	}
}

// Format writes s for people.
func (s *Status) Format(w io.Writer) error {
	mode := s.UpcallMode
	if mode == "" {
		mode = "-"
	}
	_, err := fmt.Fprintf(w, `%s:
  policy: %s (generation %d)
  ports: %v
  handlers: %d, upcall mode: %s
  upcalls: handled %d, failed %d, controller %d, shed %d, lost %d
  packet-ins: sent %d, dropped %d
  handler latency: p50 %s, p99 %s
  flows: %d tracked, %d in the datapath, installed %d
  flow limit: %d (max %d), idle timeout %s
  revalidations: %d, last dump %s
  mac entries: %d
  uptime: %s
`, s.Datapath, s.Policy, s.PolicyGen, s.Ports, s.Handlers, mode, s.Handled, s.Failed, s.Controller, s.Shed, s.Lost,
		s.PacketIns, s.PacketInDrops,
		s.LatencyP50, s.LatencyP99, s.Flows, s.DatapathFlows, s.Installed, s.FlowLimit, s.MaxFlowLimit, s.IdleTimeout,
		s.Revalidations, s.LastDump, s.MACs, s.Uptime)
	return err
}

// StatusServer answers status requests on a Unix socket: each
// connection gets one JSON Status and is closed. A peer that may not
// (see package runsock) gets {"error": "permission denied: ..."}.
type StatusServer struct {
	l      net.Listener
	path   string
	d      *Daemon
	access runsock.Access
}

// ListenStatus opens the status socket at path (replacing a stale one):
// mode 0600 in a 0700 directory, or 0660 and 0750 with access's group,
// set explicitly whatever the umask.
func (d *Daemon) ListenStatus(path string, access runsock.Access) (*StatusServer, error) {
	l, err := runsock.Listen(path, access)
	if err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}
	return &StatusServer{l: l, path: path, d: d, access: access}, nil
}

// statusReply is what the status socket sends: the status, or why not.
type statusReply struct {
	Status
	Error string `json:"error,omitempty"`
}

// Serve answers until ctx is done or the server is closed.
func (s *StatusServer) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.l.Close()
	}()
	what := s.d.dp.Type() + "@" + s.d.dp.Name()
	for {
		c, err := s.l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("status socket: %w", err)
		}
		var rep statusReply
		if err := s.access.Check(c, what); err != nil {
			rep.Error = err.Error()
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		} else if err := s.d.containedStatus("answering a status request", func() {
			if hook := testHookStatus.Load(); hook != nil {
				(*hook)()
			}
			rep.Status = s.d.Status()
		}); err != nil {
			rep = statusReply{Error: err.Error()}
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		} else {
			c.SetWriteDeadline(time.Now().Add(time.Second))
		}
		json.NewEncoder(c).Encode(&rep)
		if rep.Error != "" {
			c.Close()
		} else {
			go s.d.containedStatus("serving an upcall subscription", func() {
				s.d.afterStatus(ctx, c) // an upcall subscription, or close
			})
		}
	}
}

// Close closes the socket and removes its file.
func (s *StatusServer) Close() error {
	err := s.l.Close()
	os.Remove(s.path)
	return err
}

// QueryStatus asks the daemon listening at path, the one that drives the
// datapath dp ("netdev@br0", for messages), for its status. A caller
// that may not ask gets an error matching os.ErrPermission that says who
// may.
func QueryStatus(ctx context.Context, dp, path string) (Status, error) {
	var rep statusReply
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", path)
	if err != nil {
		if runsock.IsDenied(err) {
			return rep.Status, runsock.Denied(dp, path)
		}
		return rep.Status, fmt.Errorf("no upcalld answers for %s on %s: %w", dp, path, err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewDecoder(io.LimitReader(c, 1<<20)).Decode(&rep); err != nil {
		return rep.Status, fmt.Errorf("reading status from %s: %w", path, err)
	}
	if rep.Error != "" {
		if strings.HasPrefix(rep.Error, "permission denied") {
			return Status{}, runsock.DeniedError(rep.Error)
		}
		return Status{}, errors.New(rep.Error)
	}
	return rep.Status, nil
}
