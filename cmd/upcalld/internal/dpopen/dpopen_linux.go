package dpopen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ovsdp/ovsdp/cmd/upcalld/statusaddr"
	"github.com/ovsdp/ovsdp/genl"
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

// Open opens the datapath named by spec, creating it if it does not
// exist. A kernel datapath that exists is adopted as it is (its ports
// and flows stay). A userspace datapath lives in this process: Open
// creates it and its control socket (ctl.SocketPath), and fails if
// another process already serves one of that name.
func Open(spec Spec) (*Opened, error) {
	o := &Opened{Spec: spec}
	switch spec.Type {
	case "system":
		d, err := genl.Open(spec.Name)
		if errors.Is(err, os.ErrNotExist) {
			d, err = genl.Create(spec.Name)
			o.Created = true
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", spec, err)
		}
		o.sys, o.Datapath = d, d
	case "netdev":
		path := ctl.SocketPath(spec.Name)
		if c, err := ctl.Dial(spec.Name); err == nil {
			c.Close()
			return nil, fmt.Errorf("opening %s: another process hosts it (control socket %s answers)", spec, path)
		}
		d, err := userdp.New(spec.Name)
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", spec, err)
		}
		srv, err := ctl.Listen(path, d)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("creating %s: %w", spec, err)
		}
		o.usr, o.srv, o.Datapath, o.Created = d, srv, d, true
	default:
		return nil, fmt.Errorf("opening %s: unknown datapath type", spec)
	}
	return o, nil
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

// ControlSocket is the control socket path of a userspace datapath, or "".
func (o *Opened) ControlSocket() string {
	if o.srv == nil {
		return ""
	}
	return o.srv.Addr()
}

// StatusSocket is where upcalld answers status requests for spec:
// "upcalld-TYPE-NAME.sock" in ctl.Dir().
func StatusSocket(spec Spec) string {
	return statusaddr.Path(spec.Type, spec.Name)
}

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
