//go:build !genl_stub

package genl

import (
	"errors"

	"github.com/mdlayher/netlink"
)

// vportWatcher is the Linux implementation of VportWatcher: a socket
// in the ovs_vport multicast group.
type vportWatcher struct {
	conn    *netlink.Conn
	pending []VportEvent
}

// watchVports subscribes to the ovs_vport multicast group.
func (c *client) watchVports() (*VportWatcher, error) {
	if c.vportGroup == 0 {
		return nil, errors.New("genl: the ovs_vport family has no ovs_vport multicast group")
	}
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	if err := conn.JoinGroup(c.vportGroup); err != nil {
		conn.Close()
		return nil, wrapErr("join multicast group ovs_vport", err)
	}
	return &VportWatcher{w: vportWatcher{conn: conn}}, nil
}

// recv is VportWatcher.Recv.
func (w *vportWatcher) recv() (VportEvent, error) {
	for len(w.pending) == 0 {
		msgs, err := w.conn.Receive()
		if err != nil {
			return VportEvent{}, wrapErr("receive vport notification", err)
		}
		for _, m := range msgs {
			if len(m.Data) < 4 || m.Header.Type == netlink.Error || m.Header.Type == netlink.Done {
				continue
			}
			v, err := DecodeVport(m.Data[4:])
			if err != nil {
				return VportEvent{}, err
			}
			w.pending = append(w.pending, VportEvent{Kind: VportEventKind(m.Data[0]), Vport: v})
		}
	}
	ev := w.pending[0]
	w.pending = w.pending[1:]
	return ev, nil
}

func (w *vportWatcher) close() error { return w.conn.Close() }
