package main

import (
	"context"
	"sort"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/odp"
)

// systemBackend manages kernel datapaths through package genl.
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
	d, err := genl.Create(name)
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
	c, err := genl.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.DelDatapathByName(name)
}

// systemDP adds the optional dpctl interfaces to a kernel datapath.
type systemDP struct{ *genl.Datapath }

// PutFlows implements flowBatcher.
func (d systemDP) PutFlows(_ context.Context, flows []*odp.Flow, flags odp.PutFlags) ([]error, error) {
	return d.Client().PutFlows(d.Index(), flows, flags, genl.FlowOptions{})
}

// DelFlows implements flowDeleter.
func (d systemDP) DelFlows(_ context.Context, ids []odp.FlowID) ([]error, error) {
	return d.Client().DelFlows(d.Index(), ids, genl.FlowOptions{})
}

// SetMasksCacheSize implements cacheSizer.
func (d systemDP) SetMasksCacheSize(_ context.Context, size uint32) error {
	return d.Datapath.SetMasksCacheSize(size)
}

// createWithFeatures implements featureCreator: the datapath is created
// with these user features, not negotiated ones.
func (systemBackend) createWithFeatures(_ context.Context, name string, features uint32) error {
	c, err := genl.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.NewDatapath(genl.DatapathSpec{Name: name, Features: features})
	return err
}

func init() { backends["system"] = systemBackend{} }
