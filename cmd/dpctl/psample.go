package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ovsdp/ovsdp/odp"
)

func psampleEventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "psample-events",
		Usage: "print the samples of DP's psample actions as they come (group:G,rate:R[,cookie:HEX] data:HEX)",
		Description: "The lines are those of the kernel selftests' ovs-dpctl.py psample-events. On netdev@ the\n" +
			"samples come from the datapath's process over its control socket. On system@ the kernel\n" +
			"sends them to the psample generic netlink family's \"packets\" multicast group; Linux 6.1\n" +
			"has no psample action (OVS_ACTION_ATTR_PSAMPLE came with 6.11: a flow with one is EINVAL),\n" +
			"so dpctl does not listen there.",
		ArgsUsage: "[DP]",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Usage: "stop after `N` samples (0: run until interrupted)"},
		},
		Action: action(cmdPsampleEvents),
	}
}

// formatPsample is one psample-events line: ovs-dpctl.py's dpstr, the
// fields it prints in the order the kernel puts them (group, rate, then
// the cookie after the data), then the data.
func formatPsample(ev *odp.PsampleEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group:%d,rate:%d", ev.Group, ev.Rate)
	if ev.Cookie != nil {
		b.WriteString(",cookie:" + hex.EncodeToString(ev.Cookie))
	}
	if len(ev.Data) > 0 {
		b.WriteString(" data:" + hex.EncodeToString(ev.Data))
	}
	return b.String()
}

func cmdPsampleEvents(e *env, args []string) error {
	dp, _, err := openDPArgs(e, args, 1, 0, 0, "psample-events")
	if err != nil {
		return err
	}
	defer dp.Close()
	p, ok := dp.(odp.Psampler)
	if !ok {
		return psampleKernelErr(dp.Type(), dp.Name())
	}
	evs, err := p.PsampleEvents(e.ctx)
	if err != nil {
		return fmt.Errorf("psample-events: %w", err)
	}
	limit := e.c.Int("count")
	n := 0
	for ev := range evs {
		if e.json {
			b, err := json.Marshal(&ev)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.out, "%s\n", b)
		} else {
			fmt.Fprintln(e.out, formatPsample(&ev))
		}
		if n++; limit > 0 && n >= limit {
			return nil
		}
	}
	if err := e.ctx.Err(); err != nil {
		return nil // interrupted
	}
	return fmt.Errorf("psample-events: %s@%s: the datapath went away", dp.Type(), dp.Name())
}

// psampleKernelErr is psample-events' error on a datapath without
// psample events (system@).
func psampleKernelErr(typ, name string) error {
	return fmt.Errorf("psample-events: %s@%s: dpctl does not listen to the kernel's psample family: Linux 6.1, the kernel this project targets, has no psample action (OVS_ACTION_ATTR_PSAMPLE came with Linux 6.11; a flow with one is EINVAL), so its datapaths send no samples: %w",
		typ, name, odp.ErrUnsupported)
}
