// Package app is upcalld's command line: flags, signals, metrics and
// status endpoints around a daemon.Daemon.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/cmd/upcalld/internal/daemon"
	"github.com/ovsdp/ovsdp/cmd/upcalld/internal/dpopen"
	"github.com/ovsdp/ovsdp/internal/buildinfo"
	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/policy"
)

// Main runs upcalld with args (args[0] is the program name) and returns
// the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	a := New(stdout, stderr)
	if err := a.Run(args); err != nil {
		fmt.Fprintf(stderr, "upcalld: %v\n", err)
		return 1
	}
	return 0
}

// New returns the command line application.
func New(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "upcalld",
		Usage:     "upcall handler daemon for the kernel (system@) and userspace (netdev@) datapaths",
		UsageText: "upcalld --datapath system@NAME|netdev@NAME [--port IFACE]... [--rules FILE] [--metrics ADDR] [--group G] [flags]\n   upcalld status --datapath TYPE@NAME [--json]",
		Writer:    stdout, ErrWriter: stderr,
		HideHelpCommand: true,
		// --port values are split by policy.ParsePortSpecs, which knows
		// that "trunks=10,20" is one option.
		DisableSliceFlagSeparator: true,
		Flags:                     runFlags(),
		Action:                    func(c *cli.Context) error { return run(c, stderr) },
		Commands: []*cli.Command{{
			Name:  "status",
			Usage: "show a running daemon's handlers, upcall mode, flow counts and limits",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "datapath", Aliases: []string{"d"}, Required: true, Usage: "TYPE@NAME of the daemon's datapath"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			},
			Action: func(c *cli.Context) error { return status(c, stdout) },
		}},
	}
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "datapath", Aliases: []string{"d"}, Usage: "datapath to drive: system@NAME (kernel) or netdev@NAME (userspace, hosted in this process)"},
		&cli.StringSliceFlag{Name: "port", Aliases: []string{"p"}, Usage: "network device `IFACE[,OPTIONS]` to add as a port (repeat, or comma-separate); options: vlan=N (access port of VLAN N), trunks=N,... (trunk of those VLANs), vlan_mode=native-tagged|native-untagged with tag=N (native VLAN N), mode=ring|mmsg|xdp (netdev@: the TPACKET ring, recvmmsg or AF_XDP, falling back to the ring where AF_XDP cannot be had)"},
		&cli.StringSliceFlag{Name: "mirror", Usage: "copy selected traffic to a port, as Open vSwitch's mirrors: `SELECT:PORT`, SELECT a comma-separated list of IFACE (received on or sent to it), in=IFACE, out=IFACE, all, vlan=N (only those VLANs); repeat for more mirrors"},
		&cli.StringFlag{Name: "rules", Usage: "rules `FILE` (ovs-ofctl syntax subset); reloaded on SIGHUP. Default: L2 learning switch"},
		&cli.StringFlag{Name: "metrics", Usage: "serve Prometheus metrics on `ADDR` (host:port) at /metrics"},
		&cli.DurationFlag{Name: "idle", Value: daemon.DefaultIdleTimeout, Usage: "delete flows idle for this long"},
		&cli.IntFlag{Name: "flow-limit", Value: daemon.DefaultFlowLimit, Usage: "maximum number of datapath flows (lowered automatically when dumps are slow); a netdev@ datapath also refuses flows past it from dpctl (EFBIG)"},
		&cli.StringFlag{Name: "group", Usage: "let the members of group `G` (name or gid) use the control and status sockets: mode 0660 in a 0750 run directory, instead of 0600 and 0700 (root only)"},
		&cli.IntFlag{Name: "handlers", Usage: "upcall handler count (default: one per CPU)"},
		&cli.DurationFlag{Name: "revalidate-interval", Value: daemon.DefaultRevalidateInterval, Usage: "period of revalidation passes"},
		&cli.DurationFlag{Name: "mac-aging", Value: policy.DefaultMaxAge, Usage: "learning switch: forget addresses not seen for this long"},
		&cli.Float64Flag{Name: "packet-in-rate", Value: daemon.DefaultPacketInRate, Usage: "send at most `N` packet-ins (upcalls of controller actions) a second to the status socket's subscribers (dpctl monitor --packet-ins); the rest are counted in upcalld_packet_ins_dropped_total"},
		&cli.IntFlag{Name: "packet-in-burst", Usage: "packet-ins sent at once after a quiet spell (default: a quarter of --packet-in-rate, at least 1)"},
		&cli.BoolFlag{Name: "del-dp-on-exit", Usage: "delete the datapath when exiting"},
		&cli.BoolFlag{Name: "no-handlers", Usage: "handle no upcalls (misses are lost): only host a netdev@ datapath for dpctl"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json"},
		&cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version, the commit and the Go version, and exit"},
	}
}

// options are the parsed flags.
type options struct {
	spec        dpopen.Spec
	ports       []string
	rulesFile   string
	rules       *policy.RuleSet
	metrics     string
	cfg         daemon.Config
	delOnExit   bool
	logger      *slog.Logger
	statusPath  string
	noHandlers  bool
	access      runsock.Access
	idle, reval time.Duration
}

func parseOptions(c *cli.Context, stderr io.Writer) (*options, error) {
	if c.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; see --help)", c.Args().First())
	}
	if !c.IsSet("datapath") {
		return nil, errors.New("--datapath is required (system@NAME or netdev@NAME)")
	}
	spec, err := dpopen.ParseSpec(c.String("datapath"))
	if err != nil {
		return nil, fmt.Errorf("--datapath: %w", err)
	}
	o := &options{spec: spec, metrics: c.String("metrics"), delOnExit: c.Bool("del-dp-on-exit"), noHandlers: c.Bool("no-handlers")}
	specs, err := policy.ParsePortSpecs(c.StringSlice("port"))
	if err != nil {
		return nil, fmt.Errorf("--port: %w", err)
	}
	var vlans map[string]policy.PortVLAN
	var modes map[string]string
	for _, s := range specs {
		o.ports = append(o.ports, s.Name)
		if s.Mode != "" {
			if spec.Type != "netdev" {
				return nil, fmt.Errorf("--port %s,mode=%s: the port backend is chosen on netdev@ datapaths; the kernel (%s) reads its ports itself", s.Name, s.Mode, spec)
			}
			if modes == nil {
				modes = make(map[string]string)
			}
			modes[s.Name] = s.Mode
		}
		if s.VLAN.Mode != policy.VLANTrunk || len(s.VLAN.Trunks) > 0 {
			if vlans == nil {
				vlans = make(map[string]policy.PortVLAN)
			}
			vlans[s.Name] = s.VLAN
		}
	}
	var mirrors []policy.MirrorSpec
	for _, s := range c.StringSlice("mirror") {
		m, err := policy.ParseMirror(s)
		if err != nil {
			return nil, fmt.Errorf("--mirror: %w", err)
		}
		mirrors = append(mirrors, m)
	}
	if len(mirrors) > policy.MaxMirrors {
		return nil, fmt.Errorf("--mirror: %d mirrors: at most %d", len(mirrors), policy.MaxMirrors)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	switch c.String("log-format") {
	case "text":
		o.logger = slog.New(slog.NewTextHandler(stderr, hopts))
	case "json":
		o.logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", c.String("log-format"))
	}
	if f := c.String("rules"); f != "" {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("--rules: %w", err)
		}
		rs, err := policy.ParseRules(f, fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("--rules: %w", err)
		}
		o.rulesFile, o.rules = f, rs
	}
	if c.Int("flow-limit") <= 0 {
		return nil, fmt.Errorf("--flow-limit %d: must be positive", c.Int("flow-limit"))
	}
	if c.Float64("packet-in-rate") <= 0 {
		return nil, fmt.Errorf("--packet-in-rate %v: must be positive", c.Float64("packet-in-rate"))
	}
	if c.Int("packet-in-burst") < 0 || c.IsSet("packet-in-burst") && c.Int("packet-in-burst") == 0 {
		return nil, fmt.Errorf("--packet-in-burst %d: must be positive", c.Int("packet-in-burst"))
	}
	if c.Int("handlers") < 0 {
		return nil, fmt.Errorf("--handlers %d: must not be negative", c.Int("handlers"))
	}
	for _, n := range []string{"idle", "revalidate-interval", "mac-aging"} {
		if c.Duration(n) <= 0 {
			return nil, fmt.Errorf("--%s %v: must be positive", n, c.Duration(n))
		}
	}
	o.cfg = daemon.Config{
		Ports:              o.ports,
		PortVLANs:          vlans,
		Mirrors:            mirrors,
		PortModes:          modes,
		Rules:              o.rules,
		RulesFile:          o.rulesFile,
		Handlers:           c.Int("handlers"),
		NoHandlers:         o.noHandlers,
		IdleTimeout:        c.Duration("idle"),
		FlowLimit:          c.Int("flow-limit"),
		RevalidateInterval: c.Duration("revalidate-interval"),
		Learning:           policy.LearningOptions{MaxAge: c.Duration("mac-aging")},
		PacketInRate:       c.Float64("packet-in-rate"),
		PacketInBurst:      c.Int("packet-in-burst"),
		Logger:             o.logger,
	}
	if o.access, err = runsock.LookupGroup(c.String("group")); err != nil {
		return nil, fmt.Errorf("--group: %w", err)
	}
	o.statusPath = dpopen.StatusSocket(spec)
	return o, nil
}

func run(c *cli.Context, stderr io.Writer) error {
	if c.Bool("version") {
		_, err := fmt.Fprintf(c.App.Writer, "upcalld %s\n", buildinfo.Get())
		return err
	}
	o, err := parseOptions(c, stderr)
	if err != nil {
		return err
	}
	// Whatever the caller's umask, what this process creates is its own
	// (the sockets are chmod'ed explicitly as well).
	syscall.Umask(0o077)
	log := o.logger
	opened, err := dpopen.Open(o.spec, dpopen.Options{Access: o.access, FlowLimit: o.cfg.FlowLimit})
	if err != nil {
		return err
	}
	if opened.Created {
		log.Info("datapath created", "datapath", o.spec.String())
	} else {
		log.Info("datapath exists; adopting it (flows are kept and revalidated)", "datapath", o.spec.String())
	}
	reg := newRegistry()
	o.cfg.Datapath = opened.Datapath
	o.cfg.Registry = reg
	d, err := daemon.New(o.cfg)
	if err != nil {
		opened.Close()
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var deleteReq sync.Once
	var deleteAsked atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				if s == syscall.SIGHUP {
					log.Info("SIGHUP: reloading rules")
					if err := d.ReloadRulesFile(); err != nil {
						log.Error("reload", "err", err)
					}
					continue
				}
				log.Info("signal: shutting down", "signal", s.String())
				cancel()
			}
		}
	}()

	opened.ReportControlPanics(log, func() { d.PanicContained("control") })
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		err := opened.Serve(ctx, func() {
			deleteReq.Do(func() {
				log.Info("control socket: datapath delete requested; exiting")
				deleteAsked.Store(true)
				cancel()
			})
		})
		if err != nil {
			log.Error("control socket", "err", err)
		}
	}()
	if s := opened.ControlSocket(); s != "" {
		log.Info("control socket", "path", s)
	}
	st, err := d.ListenStatus(o.statusPath, o.access)
	if err != nil {
		log.Warn("no status socket", "err", err)
	} else {
		bg.Add(1)
		go func() {
			defer bg.Done()
			st.Serve(ctx)
		}()
		log.Info("status socket", "path", o.statusPath)
	}
	var msrv *http.Server
	if o.metrics != "" {
		l, err := net.Listen("tcp", o.metrics)
		if err != nil {
			cancel()
			bg.Wait()
			opened.Close()
			return fmt.Errorf("--metrics %s: %w", o.metrics, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := msrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		log.Info("metrics", "addr", l.Addr().String())
	}

	runErr := d.Run(ctx)
	cancel()
	if msrv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		msrv.Shutdown(sctx)
		scancel()
	}
	if st != nil {
		st.Close()
	}
	var exitErr error
	if o.delOnExit || deleteAsked.Load() {
		log.Info("deleting the datapath", "datapath", o.spec.String())
		exitErr = opened.Delete()
	} else {
		exitErr = opened.Close()
	}
	bg.Wait()
	if runErr != nil {
		return runErr
	}
	return exitErr
}

// newRegistry returns the registry served on --metrics: the Go runtime's
// and the process's collectors and upcalld_build_info; the daemon adds
// its own metrics.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	bi := buildinfo.Get()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "upcalld_build_info",
			Help:        "Always 1; the labels are the running upcalld's version, commit and Go version.",
			ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion},
		}, func() float64 { return 1 }))
	return reg
}

func status(c *cli.Context, stdout io.Writer) error {
	spec, err := dpopen.ParseSpec(c.String("datapath"))
	if err != nil {
		return fmt.Errorf("--datapath: %w", err)
	}
	ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
	defer cancel()
	st, err := daemon.QueryStatus(ctx, spec.String(), dpopen.StatusSocket(spec))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		b, err := jsonIndent(&st)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	return st.Format(stdout)
}
