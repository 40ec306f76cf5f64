//go:build !linux

package genl

import (
	"context"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/ovsdp/ovsdp/odp"
)

// Client is the kernel datapath client; on this OS every method fails with ErrNotSupported.
type Client struct{}

// Datapath is a kernel datapath handle; on this OS every method fails with ErrNotSupported.
type Datapath struct{}

// UpcallSocket is an upcall socket; on this OS every method fails with ErrNotSupported.
type UpcallSocket struct{}

// VportWatcher receives vport notifications; on this OS every method fails with ErrNotSupported.
type VportWatcher struct{}

var _ odp.Datapath = (*Datapath)(nil)
var _ odp.UpcallReceiver = (*UpcallSocket)(nil)

// Dial opens a generic netlink socket and resolves the Open vSwitch
// families. If the kernel has none of them the error wraps
// ErrModuleNotLoaded.
func Dial() (*Client, error) {
	return nil, ErrNotSupported
}

// NewClient creates a Client whose sockets come from dial: the first for
// requests, further ones for dumps, upcalls and notifications. It exists
// so that tests can supply fake sockets (e.g. from nltest.Dial); most
// programs call Dial.
func NewClient(_ func() (*netlink.Conn, error)) (*Client, error) {
	return nil, ErrNotSupported
}

// Close closes the Client's request socket.
func (c *Client) Close() error {
	return ErrNotSupported
}

// HasMeters reports whether the kernel has the ovs_meter family.
func (c *Client) HasMeters() bool {
	return false
}

// HasCTLimits reports whether the kernel has the ovs_ct_limit family.
func (c *Client) HasCTLimits() bool {
	return false
}

// NewDatapath creates a datapath (OVS_DP_CMD_NEW) with exactly the given
// features; CreateDatapath negotiates them instead.
func (c *Client) NewDatapath(_ DatapathSpec) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// GetDatapath returns the datapath with the given name.
func (c *Client) GetDatapath(_ string) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// GetDatapathByIndex returns the datapath whose local port has the given
// ifindex.
func (c *Client) GetDatapathByIndex(_ int32) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// SetDatapath changes a datapath's settings (OVS_DP_CMD_SET).
func (c *Client) SetDatapath(_ int32, _ DatapathSettings) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// MasksCacheSize returns a datapath's mask cache size.
func (c *Client) MasksCacheSize(_ int32) (uint32, error) {
	return 0, ErrNotSupported
}

// SetMasksCacheSize sets a datapath's mask cache size, keeping its
// features.
func (c *Client) SetMasksCacheSize(_ int32, _ uint32) error {
	return ErrNotSupported
}

// DelDatapath deletes a datapath and all its ports and flows.
func (c *Client) DelDatapath(_ int32) error {
	return ErrNotSupported
}

// DelDatapathByName deletes the datapath with the given name.
func (c *Client) DelDatapathByName(_ string) error {
	return ErrNotSupported
}

// Datapaths lists every datapath (a dump).
func (c *Client) Datapaths() ([]*DPInfo, error) {
	return nil, ErrNotSupported
}

// CreateDatapath creates a datapath, negotiating its features as Open
// vSwitch does: per-CPU upcall dispatch where the kernel has it, per-vport
// upcall PIDs otherwise. DPInfo.UpcallMode tells which was chosen.
func (c *Client) CreateDatapath(_ string) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// NegotiateFeatures negotiates the features of an existing datapath as
// CreateDatapath does, keeping its other feature bits.
func (c *Client) NegotiateFeatures(_ int32) (*DPInfo, error) {
	return nil, ErrNotSupported
}

// NewVport adds a vport to a datapath.
func (c *Client) NewVport(_ int32, _ VportSpec) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// SetVport changes a vport's options or upcall PIDs. The vport is named
// by spec.PortNo, or by spec.Name when PortNo is zero.
func (c *Client) SetVport(_ int32, _ VportSpec) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// GetVport returns a datapath's vport by number.
func (c *Client) GetVport(_ int32, _ uint32) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// GetVportByName returns the vport with the given name (in any datapath).
func (c *Client) GetVportByName(_ string) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// DelVport removes a datapath's vport by number and returns it as it was.
func (c *Client) DelVport(_ int32, _ uint32) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// DelVportByName removes the vport with the given name.
func (c *Client) DelVportByName(_ string) (*VportInfo, error) {
	return nil, ErrNotSupported
}

// Vports lists a datapath's vports (a dump), ordered as the kernel gives
// them.
func (c *Client) Vports(_ int32) ([]*VportInfo, error) {
	return nil, ErrNotSupported
}

// PutFlow creates or modifies a flow, as flags say: odp.PutCreate alone
// creates (ErrExist if it exists); odp.PutModify alone modifies (ErrNotExist
// if it does not), clearing the statistics with odp.PutZeroStats; both
// create or modify. It returns the statistics the flow had before a
// modification.
func (c *Client) PutFlow(_ int32, _ *odp.Flow, _ odp.PutFlags, _ FlowOptions) (odp.FlowStats, error) {
	return odp.FlowStats{}, ErrNotSupported
}

// GetFlow returns one flow, by UFID when id.UFID is set, else by key.
func (c *Client) GetFlow(_ int32, _ odp.FlowID, _ FlowOptions) (*odp.Flow, error) {
	return nil, ErrNotSupported
}

// DelFlow deletes one flow and returns its last statistics.
func (c *Client) DelFlow(_ int32, _ odp.FlowID, _ FlowOptions) (odp.FlowStats, error) {
	return odp.FlowStats{}, ErrNotSupported
}

// FlushFlows deletes every flow of a datapath.
func (c *Client) FlushFlows(_ int32) error {
	return ErrNotSupported
}

// DumpFlows calls fn for every flow of a datapath, reading the kernel's
// replies one datagram at a time on a socket of its own, so that memory
// stays bounded however large the table and fn may use the Client. An
// error from fn stops the dump. If the kernel reports NLM_F_DUMP_INTR,
// the dump runs to its end and then returns an error wrapping
// ErrDumpInterrupted. The *odp.Flow passed to fn is fn's to keep.
func (c *Client) DumpFlows(_ int32, _ FlowOptions, _ func(*odp.Flow) error) error {
	return ErrNotSupported
}

// DumpFlowsRaw is DumpFlows without the decoding: fn gets each flow
// message, valid only until fn returns.
func (c *Client) DumpFlowsRaw(_ int32, _ FlowOptions, _ func([]byte) error) error {
	return ErrNotSupported
}

// Execute runs actions on a packet (OVS_PACKET_CMD_EXECUTE). p.Key holds
// the packet's metadata (in_port, ...); MRU, Hash, Probe and UpcallPID
// are sent when set.
func (c *Client) Execute(_ int32, _ *odp.Packet) error {
	return ErrNotSupported
}

// MeterFeatures returns what the kernel's meters support.
func (c *Client) MeterFeatures(_ int32) (*MeterFeatures, error) {
	return nil, ErrNotSupported
}

// SetMeter adds or replaces meter m.ID with m's bands. With clear, the
// statistics of a replaced meter restart from zero.
func (c *Client) SetMeter(_ int32, _ Meter, _ bool) error {
	return ErrNotSupported
}

// GetMeter returns a meter with its statistics.
func (c *Client) GetMeter(_ int32, _ uint32) (*Meter, error) {
	return nil, ErrNotSupported
}

// DelMeter deletes a meter and returns its last statistics.
func (c *Client) DelMeter(_ int32, _ uint32) (*Meter, error) {
	return nil, ErrNotSupported
}

// SetZoneLimits sets connection limits per conntrack zone (Zone
// DefaultZone sets the default).
func (c *Client) SetZoneLimits(_ int32, _ []ZoneLimit) error {
	return ErrNotSupported
}

// ZoneLimits returns the limits and connection counts of the given zones,
// or of the default and every zone with a limit when zones is empty.
func (c *Client) ZoneLimits(_ int32, _ ...int32) ([]ZoneLimit, error) {
	return nil, ErrNotSupported
}

// DelZoneLimits removes the limits of the given zones (DefaultZone resets
// the default to unlimited).
func (c *Client) DelZoneLimits(_ int32, _ ...int32) error {
	return ErrNotSupported
}

// PutFlows puts many flows as PutFlow does (without returning their
// statistics), sending putBatch requests per system call and then reading
// their acknowledgements, as ovs-dpctl add-flows does. errs[i] is the
// error for flows[i], nil when it succeeded; err reports a failure of the
// socket itself, after which errs is incomplete.
func (c *Client) PutFlows(_ int32, _ []*odp.Flow, _ odp.PutFlags, _ FlowOptions) (errs []error, err error) {
	return nil, ErrNotSupported
}

// DelFlows deletes many flows as DelFlow does, without their statistics
// (see the Linux Client.DelFlows).
func (c *Client) DelFlows(_ int32, _ []odp.FlowID, _ FlowOptions) (errs []error, err error) {
	return nil, ErrNotSupported
}

// ExecuteBatch executes many packets as Execute does, sending up to
// putBatch requests per system call and then reading their
// acknowledgements. errs[i] is the error for pkts[i], nil when the kernel
// executed it; err reports a failure of the socket itself, after which
// errs is incomplete.
func (c *Client) ExecuteBatch(_ int32, _ []*odp.Packet) (errs []error, err error) {
	return nil, ErrNotSupported
}

// Open opens the existing kernel datapath called name, on a Client of its
// own that Close closes. It does not change the datapath's features.
func Open(_ string) (*Datapath, error) {
	return nil, ErrNotSupported
}

// Create creates the kernel datapath called name, negotiating its
// features (see Client.CreateDatapath), on a Client of its own that Close
// closes. It fails with an error matching os.ErrExist if it exists.
func Create(_ string) (*Datapath, error) {
	return nil, ErrNotSupported
}

// OpenDatapath returns a handle on an existing datapath that uses c; its
// Close leaves c open.
func (c *Client) OpenDatapath(_ string) (*Datapath, error) {
	return nil, ErrNotSupported
}

// CreateDatapathHandle creates a datapath with negotiated features and
// returns a handle on it that uses c.
func (c *Client) CreateDatapathHandle(_ string) (*Datapath, error) {
	return nil, ErrNotSupported
}

// Name implements odp.Datapath.
func (d *Datapath) Name() string {
	return ""
}

// Type implements odp.Datapath: "system".
func (d *Datapath) Type() string {
	return ""
}

// Index is the ifindex of the datapath's local port (dp_ifindex).
func (d *Datapath) Index() int32 {
	return 0
}

// Client returns the Client the handle uses, for commands beyond
// odp.Datapath (meters, conntrack limits, vport details, ...).
func (d *Datapath) Client() *Client {
	return nil
}

// Close closes the upcall sockets the handle opened and, for Open and
// Create, its Client. The kernel datapath stays.
func (d *Datapath) Close() error {
	return ErrNotSupported
}

// Delete deletes the kernel datapath (the handle stays to be closed).
func (d *Datapath) Delete() error {
	return ErrNotSupported
}

// Info implements odp.Datapath.
func (d *Datapath) Info(_ context.Context) (odp.DatapathInfo, error) {
	return odp.DatapathInfo{}, ErrNotSupported
}

// SetMasksCacheSize sets the datapath's mask cache size.
func (d *Datapath) SetMasksCacheSize(_ uint32) error {
	return ErrNotSupported
}

// Ports implements odp.Datapath.
func (d *Datapath) Ports(_ context.Context) ([]odp.Port, error) {
	return nil, ErrNotSupported
}

// AddPort implements odp.Datapath. Tunnel ports take the option
// "dst_port" (and "exts=gbp" for VXLAN).
func (d *Datapath) AddPort(_ context.Context, _ odp.PortSpec) (odp.Port, error) {
	return odp.Port{}, ErrNotSupported
}

// SetPort implements odp.Datapath: it changes a port's options.
func (d *Datapath) SetPort(_ context.Context, _ odp.PortSpec) error {
	return ErrNotSupported
}

// DelPort implements odp.Datapath.
func (d *Datapath) DelPort(_ context.Context, _ uint32) error {
	return ErrNotSupported
}

// PutFlow implements odp.Datapath.
func (d *Datapath) PutFlow(_ context.Context, _ *odp.Flow, _ odp.PutFlags) (odp.FlowStats, error) {
	return odp.FlowStats{}, ErrNotSupported
}

// GetFlow implements odp.Datapath.
func (d *Datapath) GetFlow(_ context.Context, _ odp.FlowID) (*odp.Flow, error) {
	return nil, ErrNotSupported
}

// DelFlow implements odp.Datapath.
func (d *Datapath) DelFlow(_ context.Context, _ odp.FlowID) (odp.FlowStats, error) {
	return odp.FlowStats{}, ErrNotSupported
}

// FlushFlows implements odp.Datapath.
func (d *Datapath) FlushFlows(_ context.Context) error {
	return ErrNotSupported
}

// DumpFlows implements odp.Datapath. It streams (see Client.DumpFlows)
// and stops with ctx's error when ctx is done.
func (d *Datapath) DumpFlows(_ context.Context, _ odp.DumpOptions, _ func(*odp.Flow) error) error {
	return ErrNotSupported
}

// DumpFlowsRaw is DumpFlows without the decoding.
func (d *Datapath) DumpFlowsRaw(_ context.Context, _ odp.DumpOptions, _ func([]byte) error) error {
	return ErrNotSupported
}

// Execute implements odp.Datapath.
func (d *Datapath) Execute(_ context.Context, _ *odp.Packet) error {
	return ErrNotSupported
}

// Upcalls implements odp.Datapath: it opens n upcall sockets and
// registers them, per CPU when the datapath dispatches upcalls per CPU
// (negotiating features first if the datapath has neither mode), else on
// every port (and on ports added later through this handle). The
// receivers are *UpcallSocket.
func (d *Datapath) Upcalls(_ context.Context, _ int) ([]odp.UpcallReceiver, error) {
	return nil, ErrNotSupported
}

// NewUpcallSocket opens an upcall socket. Register its PID with the
// datapath (Datapath.Upcalls does this) to receive upcalls on it.
func (c *Client) NewUpcallSocket() (*UpcallSocket, error) {
	return nil, ErrNotSupported
}

// PID is the socket's netlink port ID, which the kernel sends upcalls to.
func (s *UpcallSocket) PID() uint32 {
	return 0
}

// Lost counts the upcalls lost because the socket's buffer overflowed
// (ENOBUFS): the kernel drops them and reports how many only as an error,
// so each ENOBUFS counts one (at least one upcall was lost).
func (s *UpcallSocket) Lost() uint64 {
	return 0
}

// Malformed counts datagrams that were not valid upcalls and were skipped.
func (s *UpcallSocket) Malformed() uint64 {
	return 0
}

// Close closes the socket; a blocked read returns.
func (s *UpcallSocket) Close() error {
	return ErrNotSupported
}

// ReadRaw blocks until a datagram arrives, then calls fn for every upcall
// in it. The RawUpcall and the slices in it are only valid during the
// call. It returns how many upcalls it passed to fn. A full socket buffer
// (ENOBUFS) is counted in Lost and reading goes on. ReadRaw does not
// allocate. It fails with os.ErrDeadlineExceeded after SetReadDeadline,
// and with net.ErrClosed (wrapped) after Close.
func (s *UpcallSocket) ReadRaw(_ func(*RawUpcall)) (int, error) {
	return 0, ErrNotSupported
}

// SetReadDeadline sets a deadline for ReadRaw and Recv.
func (s *UpcallSocket) SetReadDeadline(_ time.Time) error {
	return ErrNotSupported
}

// Recv implements odp.UpcallReceiver: it blocks until at least one upcall
// arrives (or ctx is done), then fills ups with it and with whatever else
// is already queued, up to len(ups). Each Upcall owns its data.
func (s *UpcallSocket) Recv(_ context.Context, _ []odp.Upcall) (int, error) {
	return 0, ErrNotSupported
}

// WatchVports subscribes to the ovs_vport multicast group.
func (c *Client) WatchVports() (*VportWatcher, error) {
	return nil, ErrNotSupported
}

// Recv blocks until the next notification. A socket overflow (ENOBUFS:
// notifications were lost) is returned as an error; the watcher stays
// usable. Close unblocks it.
func (w *VportWatcher) Recv() (VportEvent, error) {
	return VportEvent{}, ErrNotSupported
}

// Close stops watching.
func (w *VportWatcher) Close() error {
	return ErrNotSupported
}

// PutFlows puts many flows as PutFlow does, without returning their
// statistics, batching the requests (see Client.PutFlows).
func (d *Datapath) PutFlows(_ context.Context, _ []*odp.Flow, _ odp.PutFlags) (errs []error, err error) {
	return nil, ErrNotSupported
}

// ExecuteBatch executes many packets as Execute does, batching the
// requests (see Client.ExecuteBatch).
func (d *Datapath) ExecuteBatch(_ context.Context, _ []*odp.Packet) (errs []error, err error) {
	return nil, ErrNotSupported
}

// Families returns nil: on this OS there is no kernel datapath.
func (c *Client) Families() map[string]uint8 { return nil }
