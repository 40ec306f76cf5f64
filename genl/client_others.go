//go:build !linux || genl_stub

package genl

import (
	"context"
	"time"

	"github.com/ovsdp/ovsdp/odp"
)

// client, upcallSocket and vportWatcher stand in for the Linux ones: the
// kernel datapath is generic netlink, which only Linux has, so newClient
// fails (with errUnsupportedOS) and nothing else is ever reached. The
// genl_stub build tag selects them on Linux too, so that their test
// (stub_test.go) runs there: go test -tags genl_stub ./genl.
type (
	client       struct{}
	upcallSocket struct{}
	vportWatcher struct{}
)

func newClient() (*client, error) { return nil, errUnsupportedOS }

func (*client) close() error                                         { return errUnsupportedOS }
func (*client) families() map[string]uint8                           { return nil }
func (*client) datapaths() ([]*DPInfo, error)                        { return nil, errUnsupportedOS }
func (*client) watchVports() (*VportWatcher, error)                  { return nil, errUnsupportedOS }
func (*client) getDatapath(string) (*DPInfo, error)                  { return nil, errUnsupportedOS }
func (*client) getDatapathByIndex(int32) (*DPInfo, error)            { return nil, errUnsupportedOS }
func (*client) createDatapath(DatapathSpec) (*DPInfo, error)         { return nil, errUnsupportedOS }
func (*client) setDatapath(int32, datapathSettings) (*DPInfo, error) { return nil, errUnsupportedOS }
func (*client) setMasksCacheSize(int32, uint32) error                { return errUnsupportedOS }
func (*client) negotiateFeatures(int32) (*DPInfo, error)             { return nil, errUnsupportedOS }
func (*client) delDatapath(int32) error                              { return errUnsupportedOS }
func (*client) vports(int32) ([]*VportInfo, error)                   { return nil, errUnsupportedOS }
func (*client) newVport(int32, vportSpec) (*VportInfo, error)        { return nil, errUnsupportedOS }
func (*client) setVport(int32, vportSpec) (*VportInfo, error)        { return nil, errUnsupportedOS }
func (*client) getVport(int32, uint32) (*VportInfo, error)           { return nil, errUnsupportedOS }
func (*client) getVportByName(string) (*VportInfo, error)            { return nil, errUnsupportedOS }
func (*client) delVport(int32, uint32) (*VportInfo, error)           { return nil, errUnsupportedOS }
func (*client) flushFlows(int32) error                               { return errUnsupportedOS }
func (*client) execute(int32, *odp.Packet) error                     { return errUnsupportedOS }
func (*client) newUpcallSocket() (*UpcallSocket, error)              { return nil, errUnsupportedOS }
func (*client) meterFeatures(int32) (*odp.MeterFeatures, error)      { return nil, errUnsupportedOS }
func (*client) setMeter(int32, odp.MeterInfo, bool) error            { return errUnsupportedOS }
func (*client) getMeter(int32, uint32) (*odp.MeterInfo, error)       { return nil, errUnsupportedOS }
func (*client) delMeter(int32, uint32) (*odp.MeterInfo, error)       { return nil, errUnsupportedOS }
func (*client) setZoneLimits(int32, []ZoneLimit) error               { return errUnsupportedOS }
func (*client) zoneLimits(int32, ...int32) ([]ZoneLimit, error)      { return nil, errUnsupportedOS }
func (*client) delZoneLimits(int32, ...int32) error                  { return errUnsupportedOS }

func (*client) putFlow(int32, *odp.Flow, odp.PutFlags, flowOptions) (odp.FlowStats, error) {
	return odp.FlowStats{}, errUnsupportedOS
}
func (*client) getFlow(int32, odp.FlowID, flowOptions) (*odp.Flow, error) {
	return nil, errUnsupportedOS
}
func (*client) delFlow(int32, odp.FlowID, flowOptions) (odp.FlowStats, error) {
	return odp.FlowStats{}, errUnsupportedOS
}
func (*client) dumpFlows(int32, flowOptions, func(*odp.Flow) error) error {
	return errUnsupportedOS
}
func (*client) dumpFlowsRaw(int32, flowOptions, func([]byte) error) error {
	return errUnsupportedOS
}
func (*client) putFlows(int32, []*odp.Flow, odp.PutFlags, flowOptions) ([]error, error) {
	return nil, errUnsupportedOS
}
func (*client) delFlows(int32, []odp.FlowID, flowOptions) ([]error, error) {
	return nil, errUnsupportedOS
}
func (*client) executeBatch(int32, []*odp.Packet) ([]error, error) { return nil, errUnsupportedOS }

func (*upcallSocket) getPID() uint32                                  { return 0 }
func (*upcallSocket) lostCount() uint64                               { return 0 }
func (*upcallSocket) malformedCount() uint64                          { return 0 }
func (*upcallSocket) backlog() (int, int, error)                      { return 0, 0, errUnsupportedOS }
func (*upcallSocket) close() error                                    { return errUnsupportedOS }
func (*upcallSocket) readRaw(func(*RawUpcall)) (int, error)           { return 0, errUnsupportedOS }
func (*upcallSocket) setReadDeadline(time.Time) error                 { return errUnsupportedOS }
func (*upcallSocket) recv(context.Context, []odp.Upcall) (int, error) { return 0, errUnsupportedOS }
func (*vportWatcher) recv() (VportEvent, error)                       { return VportEvent{}, errUnsupportedOS }
func (*vportWatcher) close() error                                    { return errUnsupportedOS }
