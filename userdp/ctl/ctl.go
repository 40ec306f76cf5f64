// Package ctl is the control socket of a userspace datapath: a server that
// exposes any odp.Datapath on a Unix socket, and a client that implements
// odp.Datapath over it. dpctl uses the client for netdev@NAME datapaths,
// which live inside a long-running process (upcalld).
//
// The protocol is one JSON object per line. Flow keys, masks and actions
// travel in their netlink encoding (odp.MarshalKey, odp.MarshalActions),
// so the client sees exactly what a kernel datapath would return.
package ctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ovsdp/ovsdp/internal/dpname"
	"github.com/ovsdp/ovsdp/internal/runsock"
	"github.com/ovsdp/ovsdp/odp"
)

// DefaultDir is where datapath control sockets live, one per datapath
// ("NAME.sock"). The OVSDP_RUNDIR environment variable overrides it.
const DefaultDir = "/run/ovsdp"

// Dir returns the control socket directory in use.
func Dir() string {
	if d := os.Getenv("OVSDP_RUNDIR"); d != "" {
		return d
	}
	return DefaultDir
}

// SocketPath returns the control socket path of datapath name.
func SocketPath(name string) string {
	return filepath.Join(Dir(), name+".sock")
}

// StatusSocket returns the path of the status socket of the upcalld
// that drives datapath dpType@name ("system" or "netdev"):
// "upcalld-TYPE-NAME.status" in Dir. Its suffix keeps it apart from the
// control sockets ("NAME.sock", see List). Every reader and writer of
// the status socket derives its address here.
func StatusSocket(dpType, name string) string {
	return filepath.Join(Dir(), "upcalld-"+dpType+"-"+name+statusSuffix)
}

// Suffixes of the files of Dir.
const (
	sockSuffix   = ".sock"
	statusSuffix = ".status"
)

// List returns the names of the userspace datapaths whose control sockets
// exist in Dir, sorted; files that cannot be a datapath's control socket
// (another suffix, an invalid name, not a socket) are left out. When the
// caller may not read Dir, the error matches os.ErrPermission and says
// who may.
func List() ([]string, error) {
	ents, err := os.ReadDir(Dir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if runsock.IsDenied(err) {
		return nil, fmt.Errorf("listing netdev@ datapaths: %w", runsock.Denied("the run directory "+Dir(), filepath.Join(Dir(), "x")))
	}
	if err != nil {
		return nil, fmt.Errorf("ctl: listing %s: %w", Dir(), err)
	}
	var names []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), sockSuffix)
		if ok && dpname.ValidName(n) && e.Type()&os.ModeSocket != 0 {
			names = append(names, n)
		}
	}
	return names, nil
}

// request is one call from the client.
type request struct {
	Op     string           `json:"op"`
	Spec   *odp.PortSpec    `json:"spec,omitempty"`
	Number uint32           `json:"number,omitempty"`
	Flow   *wireFlow        `json:"flow,omitempty"`
	Flags  odp.PutFlags     `json:"flags,omitempty"`
	ID     *wireFlowID      `json:"id,omitempty"`
	Dump   *odp.DumpOptions `json:"dump,omitempty"`
	Packet *wirePacket      `json:"packet,omitempty"`
	Meter  *odp.MeterInfo   `json:"meter,omitempty"`
	Clear  bool             `json:"clear,omitempty"`
	// CTFilter selects the entries of ct_dump and ct_flush.
	CTFilter *odp.CTFilter `json:"ct_filter,omitempty"`
	// ZoneLimits are ct_set_limits' limits, Zones the zones of
	// ct_get_limits and ct_del_limits.
	ZoneLimits []odp.CTZoneLimit `json:"zone_limits,omitempty"`
	Zones      []int32           `json:"zones,omitempty"`
	// V6 and On are the family and the setting of ipf_enable,
	// ipf_min_frag and ct_set_seq_check (tuning.go).
	V6 bool `json:"v6,omitempty"`
	On bool `json:"on,omitempty"`
}

// response is one answer from the server. A dump answers with one
// response per flow (More set) and a final one without More.
type response struct {
	Err   string            `json:"err,omitempty"`
	Errno string            `json:"errno,omitempty"`
	Info  *odp.DatapathInfo `json:"info,omitempty"`
	Ports []odp.Port        `json:"ports,omitempty"`
	Port  *odp.Port         `json:"port,omitempty"`
	Stats *odp.FlowStats    `json:"stats,omitempty"`
	Flow  *wireFlow         `json:"flow,omitempty"`
	More  bool              `json:"more,omitempty"`
	Meter *odp.MeterInfo    `json:"meter,omitempty"`
	// MeterFeatures answers meter_features.
	MeterFeatures *odp.MeterFeatures `json:"meter_features,omitempty"`
	// CTEntry is one entry of a ct_dump (More set), CTStats ct_stats's
	// answer, Count ct_count's and ct_get_max's.
	CTEntry *odp.CTEntry `json:"ct_entry,omitempty"`
	CTStats *odp.CTStats `json:"ct_stats,omitempty"`
	Count   *uint32      `json:"count,omitempty"`
	// ZoneLimits answers ct_get_limits (never nil there).
	ZoneLimits *[]odp.CTZoneLimit `json:"zone_limits,omitempty"`
	// Psample is one event of a psample_events stream (More set).
	Psample *odp.PsampleEvent `json:"psample,omitempty"`
	// IPF answers ipf_status, IPFQueues ipf_queues (every response of
	// it, possibly none), On ct_get_seq_check (tuning.go).
	IPF       *odp.IPFStatusAll `json:"ipf,omitempty"`
	IPFQueues []odp.IPFQueue    `json:"ipf_queues,omitempty"`
	On        *bool             `json:"on,omitempty"`
	// Closed is set on the server's last answer before it closes an
	// idle connection; the request the client sent, if any, was not
	// read.
	Closed bool `json:"closed,omitempty"`
}

// wireFlow is an odp.Flow with its key, mask and actions netlink-encoded.
type wireFlow struct {
	UFID    odp.UFID `json:"ufid"`
	Key     []byte   `json:"key,omitempty"`
	Mask    []byte   `json:"mask,omitempty"`
	HasMask bool     `json:"has_mask,omitempty"`
	Actions []byte   `json:"actions,omitempty"`
	// HasActions tells an empty action list (drop) from none (a terse
	// dump), which Actions alone cannot once encoded.
	HasActions bool          `json:"has_actions,omitempty"`
	Stats      odp.FlowStats `json:"stats"`
}

type wireFlowID struct {
	UFID odp.UFID `json:"ufid"`
	Key  []byte   `json:"key,omitempty"`
}

type wirePacket struct {
	Data    []byte `json:"data"`
	Key     []byte `json:"key,omitempty"`
	Actions []byte `json:"actions,omitempty"`
	MRU     uint16 `json:"mru,omitempty"`
	Hash    uint64 `json:"hash,omitempty"`
	Probe   bool   `json:"probe,omitempty"`
}

func toWireFlow(f *odp.Flow) (*wireFlow, error) {
	w := &wireFlow{UFID: f.UFID, Stats: f.Stats}
	var err error
	if f.Key != nil {
		if w.Key, err = odp.MarshalKey(f.Key); err != nil {
			return nil, err
		}
	}
	if f.Mask != nil {
		w.HasMask = true
		if w.Mask, err = odp.MarshalKey(f.Mask); err != nil {
			return nil, err
		}
	}
	if f.Actions != nil {
		w.HasActions = true
		if w.Actions, err = odp.MarshalActions(f.Actions); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func fromWireFlow(w *wireFlow) (*odp.Flow, error) {
	f := &odp.Flow{UFID: w.UFID, Stats: w.Stats}
	var err error
	if w.Key != nil {
		if f.Key, err = odp.UnmarshalKey(w.Key); err != nil {
			return nil, err
		}
	}
	if w.HasMask {
		if f.Mask, err = odp.UnmarshalKey(w.Mask); err != nil {
			return nil, err
		}
		if f.Mask == nil {
			f.Mask = odp.FlowKey{}
		}
	}
	if w.HasActions {
		if f.Actions, err = odp.UnmarshalActions(w.Actions); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Error kinds carried across the socket so that errors.Is works on the
// client as it does on the server.
var errnoKinds = []struct {
	name   string
	target error
	errno  syscall.Errno
}{
	{"EACCES", syscall.EACCES, syscall.EACCES},
	{"EFBIG", syscall.EFBIG, syscall.EFBIG},
	{"EBUSY", syscall.EBUSY, syscall.EBUSY},
	{"EMSGSIZE", syscall.EMSGSIZE, syscall.EMSGSIZE},
	{"EAGAIN", syscall.EAGAIN, syscall.EAGAIN},
	{"ETIMEDOUT", syscall.ETIMEDOUT, syscall.ETIMEDOUT},
	{"EEXIST", os.ErrExist, syscall.EEXIST},
	{"ENOENT", os.ErrNotExist, syscall.ENOENT},
	{"EPERM", os.ErrPermission, syscall.EPERM},
	{"EOPNOTSUPP", odp.ErrUnsupported, syscall.EOPNOTSUPP},
	{"EINVAL", syscall.EINVAL, syscall.EINVAL},
}

// errnoName classifies err for the wire.
func errnoName(err error) string {
	for _, k := range errnoKinds {
		if errors.Is(err, k.target) || errors.Is(err, k.errno) {
			return k.name
		}
	}
	return ""
}

// remoteError is an error returned by the server.
type remoteError struct {
	msg   string
	errno syscall.Errno
	kind  error
}

func (e *remoteError) Error() string { return e.msg }

// Is lets errors.Is match the sentinel and the errno the server's error
// matched, and what that errno matches (EACCES: os.ErrPermission).
func (e *remoteError) Is(target error) bool {
	return e.kind != nil && (target == e.kind || target == e.errno || e.errno.Is(target))
}

func toError(r *response) error {
	if r.Err == "" {
		return nil
	}
	e := &remoteError{msg: r.Err}
	for _, k := range errnoKinds {
		if k.name == r.Errno {
			e.kind, e.errno = k.target, k.errno
		}
	}
	return e
}
