package genl

import (
	"errors"

	"github.com/mdlayher/netlink"
)

// VportWatcher receives vport notifications (ports added, deleted or
// changed, in any datapath).
type VportWatcher struct {
	conn    *netlink.Conn
	pending []VportEvent
}

// WatchVports subscribes to the ovs_vport multicast group.
func (c *Client) WatchVports() (*VportWatcher, error) {
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
	return &VportWatcher{conn: conn}, nil
}

// Recv blocks until the next notification. A socket overflow (ENOBUFS:
// notifications were lost) is returned as an error; the watcher stays
// usable. Close unblocks it.
func (w *VportWatcher) Recv() (VportEvent, error) {
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

// Close stops watching.
func (w *VportWatcher) Close() error { return w.conn.Close() }
