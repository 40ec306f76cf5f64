package crosscheck

import (
	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
	"github.com/ovsdp/ovsdp/userdp"
)

// SystemOpener creates a kernel datapath (system@NAME); its cleanup
// deletes it.
func SystemOpener(name string) (odp.Datapath, func(), error) {
	d, err := genl.Create(genl.DatapathSpec{Name: name})
	if err != nil {
		return nil, nil, err
	}
	return d, func() {
		d.Delete() // the name is unique to the run: nothing to retry
		d.Close()
	}, nil
}

// NetdevOpener creates a userspace datapath (netdev@NAME) without a
// local port (the kernel's local port is down and silent; a tap would
// not be) and with upcall queues deep enough for the fuzz batches; its
// cleanup closes it.
func NetdevOpener(name string) (odp.Datapath, func(), error) {
	d, err := userdp.New(name, userdp.WithoutLocalPort(), userdp.WithUpcallQueueLen(8192))
	if err != nil {
		return nil, nil, err
	}
	return d, func() { d.Close() }, nil
}
