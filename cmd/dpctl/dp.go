package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/dpname"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp/ctl"
)

// backend manages the datapaths of one type ("system" or "netdev").
type backend interface {
	// list returns the names of the existing datapaths, sorted.
	list(ctx context.Context) ([]string, error)
	// create makes a new datapath.
	create(ctx context.Context, name string) error
	// open returns a handle to an existing datapath.
	open(ctx context.Context, name string) (odp.Datapath, error)
	// del removes a datapath.
	del(ctx context.Context, name string) error
}

// dpTypes lists the datapath types in the order dump-dps shows them.
var dpTypes = dpname.Types

// backends maps a datapath type to its backend; filled by the init
// functions of system.go (system) and of this file (netdev).
var backends = map[string]backend{}

// dpName is a datapath name split into type and name ("system@br0").
type dpName struct {
	typ, name string
}

func (d dpName) String() string { return d.typ + "@" + d.name }

// parseDPName splits "TYPE@NAME"; a bare NAME means system@NAME, as in
// ovs-dpctl. The rules are dpname.Parse's.
func parseDPName(s string) (dpName, error) {
	typ, name, err := dpname.Parse(s)
	if err != nil {
		return dpName{}, err
	}
	return dpName{typ: typ, name: name}, nil
}

// moduleMissing records that listing found no openvswitch kernel module.
var moduleMissing bool

// noDatapath is the error of a command that needs a datapath when none
// exists.
func noDatapath() error {
	if moduleMissing {
		return fmt.Errorf("no datapath found (no userspace datapath, and %w)", genl.ErrModuleNotLoaded)
	}
	return notExist("no datapath found")
}

// allDatapaths lists every datapath of every type. Errors of a type are
// ignored when another type has datapaths (for example a host without the
// openvswitch module that runs userspace datapaths), as ovs-dpctl does.
func allDatapaths(ctx context.Context) ([]dpName, error) {
	var (
		out      []dpName
		firstErr error
	)
	for _, t := range dpTypes {
		names, err := backends[t].list(ctx)
		if err != nil && errors.Is(err, genl.ErrModuleNotLoaded) {
			// No module, no kernel datapaths: not an error unless a
			// command needs one (see noDatapath).
			moduleMissing = true
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, dpName{typ: t, name: n})
		}
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// dpExists reports whether s names an existing datapath (how ovs-dpctl
// tells an optional DP argument from a flow).
func dpExists(ctx context.Context, s string) bool {
	d, err := parseDPName(s)
	if err != nil {
		return false
	}
	names, err := backends[d.typ].list(ctx)
	if err != nil {
		// A caller that may not list the datapaths of a type may still
		// name one: opening it says whether it may use it.
		return errors.Is(err, os.ErrPermission) && strings.Contains(s, "@")
	}
	for _, n := range names {
		if n == d.name {
			return true
		}
	}
	return false
}

// openDP opens the named datapath.
func openDP(ctx context.Context, s string) (odp.Datapath, error) {
	d, err := parseDPName(s)
	if err != nil {
		return nil, err
	}
	dp, err := backends[d.typ].open(ctx, d.name)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			// It says which datapath and who may use it.
			return nil, err
		}
		if err2 := notFoundDP(d, err); err2 != err {
			return nil, err2
		}
		return nil, fmt.Errorf("opening datapath %s: %w", d, err)
	}
	return dp, nil
}

// optDP implements ovs-dpctl's optional DP argument: when the first of
// args names an existing datapath it is used and removed; otherwise,
// when fewer than maxArgs arguments were given, the only datapath is used.
func optDP(ctx context.Context, args []string, maxArgs int) (odp.Datapath, []string, error) {
	if len(args) > 0 && dpExists(ctx, args[0]) {
		dp, err := openDP(ctx, args[0])
		return dp, args[1:], err
	}
	if len(args) >= maxArgs {
		if len(args) > 0 {
			return nil, nil, notExist("datapath %s does not exist", args[0])
		}
	}
	all, err := allDatapaths(ctx)
	if err != nil {
		return nil, nil, err
	}
	switch len(all) {
	case 0:
		return nil, nil, noDatapath()
	case 1:
		dp, err := openDP(ctx, all[0].String())
		return dp, args, err
	}
	names := make([]string, len(all))
	for i, d := range all {
		names[i] = d.String()
	}
	return nil, nil, fmt.Errorf("several datapaths exist (%s): name one", strings.Join(names, ", "))
}

// netdevBackend manages userspace datapaths through their control
// sockets. A userspace datapath lives in an upcalld process; add-dp starts
// one.
type netdevBackend struct{}

func (netdevBackend) list(context.Context) ([]string, error) {
	names, err := ctl.List()
	if err != nil {
		return nil, err
	}
	// Keep only sockets that answer: a crashed server leaves its file.
	// One the caller may not connect to exists all the same.
	live := names[:0]
	for _, n := range names {
		c, err := ctl.Dial(n)
		if err == nil {
			c.Close()
		}
		if err == nil || errors.Is(err, os.ErrPermission) {
			live = append(live, n)
		}
	}
	return live, nil
}

func (netdevBackend) open(_ context.Context, name string) (odp.Datapath, error) {
	return ctl.Dial(name)
}

func (b netdevBackend) create(ctx context.Context, name string) error {
	return b.createWithGroup(ctx, name, "")
}

// groupCreator is a backend whose datapaths can be shared with a group
// (add-dp --group).
type groupCreator interface {
	createWithGroup(ctx context.Context, name, group string) error
}

// createWithGroup starts netdev@name for root and, when group is not
// "", the members of group.
func (netdevBackend) createWithGroup(ctx context.Context, name, group string) error {
	c, err := ctl.Dial(name)
	if err == nil {
		c.Close()
		return fmt.Errorf("netdev@%s: %w", name, os.ErrExist)
	}
	if errors.Is(err, os.ErrPermission) {
		return err
	}
	return startUserspaceDatapath(ctx, name, group)
}

func (netdevBackend) del(ctx context.Context, name string) error {
	return stopUserspaceDatapath(ctx, name)
}

// errUsage marks command-line mistakes.
var errUsage = errors.New("usage")

func init() { backends["netdev"] = netdevBackend{} }

// openDPArgs opens the datapath a command names first in args, or the only
// one (optDP, which reads args[0] as a datapath name only while there are
// fewer than maxArgs arguments or it names one), and checks that between
// min and max (-1: any number) arguments remain, as usage says. With max 0
// the error names the first extra argument. The caller closes the
// datapath; on error it is closed already.
func openDPArgs(e *env, args []string, maxArgs, min, max int, usage string) (odp.Datapath, []string, error) {
	dp, args, err := optDP(e.ctx, args, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	if max == 0 && len(args) > 0 {
		err = fmt.Errorf("%s: unexpected argument %q", strings.Fields(usage)[0], args[0])
	} else {
		err = needArgs(args, min, max, usage)
	}
	if err != nil {
		dp.Close()
		return nil, nil, err
	}
	return dp, args, nil
}
