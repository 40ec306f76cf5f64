package dpopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// Opened is an open datapath.
type Opened struct {
	Spec Spec
	// Datapath is the datapath, to be used through odp.Datapath only.
	Datapath odp.Datapath
	// Created is set when Open created the datapath (else it adopted an
	// existing kernel datapath).
	Created bool

	sys *genl.Datapath
	usr *userdp.Datapath
	srv *ctl.Server

	closeOnce sync.Once
}

// Options are what Open needs beyond the spec.
type Options struct {
	// Access is who may use the control socket of a userspace datapath
	// besides root (runsock.RootOnly: nobody).
	Access runsock.Access
	// FlowLimit caps the flows of a userspace datapath (0: no cap).
	FlowLimit int
}

// Open opens the datapath named by spec, creating it if it does not
// exist. A kernel datapath that exists is adopted as it is (its ports
// and flows stay). A userspace datapath lives in this process: Open
// creates it (with o.FlowLimit) and its control socket (ctl.SocketPath,
// for o.Access), and fails if another process already serves one of
// that name.
func Open(spec Spec, o Options) (*Opened, error) {
	opened := &Opened{Spec: spec}
	switch spec.Type {
	case "system":
		d, err := genl.Open(spec.Name)
		if errors.Is(err, os.ErrNotExist) {
			d, err = genl.Create(genl.DatapathSpec{Name: spec.Name})
			opened.Created = true
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", spec, err)
		}
		opened.sys, opened.Datapath = d, d
	case "netdev":
		path := ctl.SocketPath(spec.Name)
		if c, err := ctl.Dial(spec.Name); err == nil {
			c.Close()
			return nil, fmt.Errorf("opening %s: another process hosts it (control socket %s answers)", spec, path)
		}
		d, err := userdp.New(spec.Name, userdp.WithFlowLimit(o.FlowLimit))
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", spec, err)
		}
		var copts []ctl.Option
		if o.Access.HasGroup() {
			copts = append(copts, ctl.WithGroup(o.Access.GID, o.Access.Group))
		}
		srv, err := ctl.Listen(path, d, copts...)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("creating %s: %w", spec, err)
		}
		opened.usr, opened.srv, opened.Datapath, opened.Created = d, srv, d, true
	default:
		return nil, fmt.Errorf("opening %s: unknown datapath type", spec)
	}
	return opened, nil
}

// Serve answers the control socket of a userspace datapath until Close;
// onDelete is called when a client (dpctl del-dp) asks to delete the
// datapath. For a kernel datapath it returns at once.
func (o *Opened) Serve(ctx context.Context, onDelete func()) error {
	if o.srv == nil {
		return nil
	}
	o.srv.OnDelete = onDelete
	return o.srv.Serve(ctx)
}

// ReportControlPanics sets where the control socket of a userspace
// datapath reports a panic it contained to one connection: log gets the
// panic and its stack, onPanic is called after (for a metric). For a
// kernel datapath it does nothing. Call it before Serve.
func (o *Opened) ReportControlPanics(log *slog.Logger, onPanic func()) {
	if o.srv == nil {
		return
	}
	o.srv.Logger, o.srv.OnPanic = log, onPanic
}

// ControlSocket is the control socket path of a userspace datapath, or "".
func (o *Opened) ControlSocket() string {
	if o.srv == nil {
		return ""
	}
	return o.srv.Addr()
}

// StatusSocket is where upcalld answers status requests for spec
// (ctl.StatusSocket, the one place that derives it).
func StatusSocket(spec Spec) string { return ctl.StatusSocket(spec.Type, spec.Name) }

// Close releases the datapath: a kernel datapath stays (with its ports
// and flows, which keep forwarding); a userspace one stops with the
// process, its control socket removed.
func (o *Opened) Close() error {
	var err error
	o.closeOnce.Do(func() {
		if o.srv != nil {
			o.srv.Close()
		}
		err = o.Datapath.Close()
	})
	return err
}

// Delete removes the datapath (the kernel's, with its ports and flows;
// a userspace one is closed, which deletes its tap devices) and closes
// the handle.
func (o *Opened) Delete() error {
	var derr error
	if o.sys != nil {
		derr = o.sys.Delete()
		if errors.Is(derr, os.ErrNotExist) {
			derr = nil
		}
	}
	cerr := o.Close()
	if derr != nil {
		return fmt.Errorf("deleting %s: %w", o.Spec, derr)
	}
	return cerr
}
