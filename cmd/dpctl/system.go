package main

import (
	"context"
	"sort"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
)

// systemBackend manages kernel datapaths through package genl. Its
// datapaths are systemDP.
type systemBackend struct{}

func (systemBackend) list(context.Context) ([]string, error) {
	c, err := genl.Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dps, err := c.Datapaths()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(dps))
	for _, d := range dps {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return names, nil
}

func (systemBackend) create(_ context.Context, name string) error {
	d, err := genl.Create(genl.DatapathSpec{Name: name})
	if err != nil {
		return err
	}
	return d.Close()
}

func (systemBackend) open(_ context.Context, name string) (odp.Datapath, error) {
	d, err := genl.Open(name)
	if err != nil {
		return nil, err
	}
	return systemDP{d}, nil
}

func (systemBackend) del(_ context.Context, name string) error {
	d, err := genl.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Delete()
}

// createWithFeatures implements featureCreator: the datapath is created
// with these user features, not negotiated ones.
func (systemBackend) createWithFeatures(_ context.Context, name string, features uint32) error {
	d, err := genl.Create(genl.DatapathSpec{Name: name, Features: features, ExactFeatures: true})
	if err != nil {
		return err
	}
	return d.Close()
}

// systemDP is a kernel datapath as dpctl holds it, the type that
// dpctl's kernel-only commands look for. *genl.Datapath has dpctl's
// optional interfaces itself, and the kernel's meters and conntrack
// limits.
type systemDP struct{ *genl.Datapath }

var (
	_ flowBatcher = systemDP{}
	_ flowDeleter = systemDP{}
	_ cacheSizer  = systemDP{}
	_ rawDumper   = systemDP{}
)

func init() { backends["system"] = systemBackend{} }
