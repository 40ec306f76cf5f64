package main

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// deleteLink deletes the network device called name, as del-if -d does
// after removing the port. A device that is already gone (the kernel
// removes the devices of internal and tunnel ports with the port) is
// not an error.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("looking up device %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("deleting device %s: %w", name, err)
	}
	return nil
}
