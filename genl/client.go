package genl

// Client talks to the kernel's Open vSwitch generic netlink families
// about what is not one datapath's: the families themselves, the list of
// datapaths and vport notifications. A kernel datapath's own commands
// (ports, flows, packets, meters, conntrack limits) are Datapath's, from
// Open or Create. A Client is safe for concurrent use.
//
// Off Linux, Dial fails with an error wrapping ErrNotSupported.
type Client struct {
	// c is the operating system's implementation (client_linux.go,
	// client_others.go).
	c *client
}

// Dial opens a generic netlink socket and resolves the Open vSwitch
// families. If the kernel has none of them the error wraps
// ErrModuleNotLoaded; off Linux it wraps ErrNotSupported.
func Dial() (*Client, error) {
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close closes the Client's socket.
func (c *Client) Close() error { return c.c.close() }

// Families returns the Open vSwitch generic netlink families the kernel
// has, by name, with the version each reports: ovs_datapath, ovs_vport,
// ovs_flow and ovs_packet always, ovs_meter and ovs_ct_limit when the
// kernel has them.
func (c *Client) Families() map[string]uint8 { return c.c.families() }

// Datapaths lists every kernel datapath (a dump, restarted when the
// kernel reports that the table changed under it).
func (c *Client) Datapaths() ([]*DPInfo, error) { return c.c.datapaths() }

// WatchVports subscribes to the ovs_vport multicast group: the returned
// watcher receives a VportEvent for every vport added, deleted or
// changed, in any datapath.
func (c *Client) WatchVports() (*VportWatcher, error) { return c.c.watchVports() }

// Open opens the existing kernel datapath called name, on a socket of
// its own that Datapath.Close closes. It does not change the datapath's
// features. It fails with an error matching os.ErrNotExist when there is
// no such datapath.
func Open(name string) (*Datapath, error) {
	return onNewClient(func(c *client) (*DPInfo, error) { return c.getDatapath(name) })
}

// Create creates the kernel datapath spec describes (negotiating its
// features unless spec.ExactFeatures, see DatapathSpec) and opens it, on
// a socket of its own that Datapath.Close closes. It fails with an error
// matching os.ErrExist if the datapath exists.
func Create(spec DatapathSpec) (*Datapath, error) {
	return onNewClient(func(c *client) (*DPInfo, error) { return c.createDatapath(spec) })
}

// onNewClient dials a client and makes a Datapath of the datapath get
// returns on it.
func onNewClient(get func(*client) (*DPInfo, error)) (*Datapath, error) {
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	return datapathOn(c, get)
}

// datapathOn makes a Datapath that owns c of the datapath get returns;
// if get fails, c is closed.
func datapathOn(c *client, get func(*client) (*DPInfo, error)) (*Datapath, error) {
	info, err := get(c)
	if err != nil {
		c.close()
		return nil, err
	}
	return &Datapath{c: c, name: info.Name, index: info.Index}, nil
}

// VportWatcher receives vport notifications (ports added, deleted or
// changed, in any datapath); Client.WatchVports makes one.
type VportWatcher struct{ w vportWatcher }

// Recv blocks until the next notification. A socket overflow (ENOBUFS:
// notifications were lost) is returned as an error; the watcher stays
// usable. Close unblocks it.
func (w *VportWatcher) Recv() (VportEvent, error) { return w.w.recv() }

// Close stops watching.
func (w *VportWatcher) Close() error { return w.w.close() }
