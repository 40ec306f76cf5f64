package daemon

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
)

// carrierUp reports whether the network device name, in the daemon's
// namespace, is up with a carrier (IFF_RUNNING). A port with no such
// device (a memory port, a device in another namespace) is taken to be
// up: nothing says it is down.
func carrierUp(name string) bool {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return true
	}
	return ifi.Flags&net.FlagRunning != 0
}

// refreshLiveness reads the liveness of the ports that group buckets
// watch (only when the rules have groups) and, when it changed, gives
// the policy a new Env.PortUp: a new generation, so that the flows
// through the groups are re-decided.
func (d *Daemon) refreshLiveness(ctx context.Context) {
	ps := d.pol.Load()
	if len(ps.rules.Groups()) == 0 {
		return
	}
	ports, err := d.dp.Ports(ctx)
	if err != nil {
		return // refreshPorts has reported it
	}
	isUp := d.cfg.PortUp
	if isUp == nil {
		isUp = carrierUp
	}
	var down []uint32
	for _, p := range ports {
		if !isUp(p.Name) {
			down = append(down, p.Number)
		}
	}
	slices.Sort(down)
	var b strings.Builder
	for _, n := range down {
		fmt.Fprintf(&b, "%d,", n)
	}
	if b.String() == d.down && ps.env.PortUp != nil {
		return
	}
	d.down = b.String()
	d.updatePolicy(func(ps *policyState) {
		env := *ps.env
		env.PortUp = func(port uint32) bool {
			_, found := slices.BinarySearch(down, port)
			return !found
		}
		ps.env = &env
	})
	d.log.Info("port liveness", "down", down)
}
