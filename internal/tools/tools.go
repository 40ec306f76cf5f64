//go:build tools

// Package tools pins module dependencies that are not yet imported by code.
package tools

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/gopacket"
	_ "github.com/mdlayher/genetlink"
	_ "github.com/mdlayher/netlink"
	_ "github.com/urfave/cli/v2"
	_ "github.com/vishvananda/netlink"
	_ "github.com/vishvananda/netns"
	_ "golang.org/x/sys/cpu"
)
