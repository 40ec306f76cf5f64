package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ovsdp/ovsdp/genl"
	"github.com/ovsdp/ovsdp/internal/buildinfo"
)

// featureNames names the OVS_DP_F_* user feature bits.
var featureNames = []struct {
	bit  uint32
	name string
}{
	{genl.FeatureUnaligned, "unaligned"},
	{genl.FeatureVportPIDs, "vport-pids"},
	{genl.FeatureTCRecircSharing, "tc-recirc-sharing"},
	{genl.FeatureDispatchUpcallPerCPU, "dispatch-upcall-per-cpu"},
}

// formatFeatures names the bits of f, unknown bits in hex.
func formatFeatures(f uint32) string {
	var parts []string
	for _, n := range featureNames {
		if f&n.bit != 0 {
			parts = append(parts, n.name)
			f &^= n.bit
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", f))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// kernelFeatures describes the kernel's datapath support: the release,
// the Open vSwitch generic netlink families with their versions, and the
// user features of every kernel datapath. Without the module it says so.
func kernelFeatures() string {
	var b strings.Builder
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		fmt.Fprintf(&b, "kernel: %s %s\n", unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]))
	}
	c, err := genl.Dial()
	if err != nil {
		if errors.Is(err, genl.ErrModuleNotLoaded) {
			b.WriteString("kernel datapath: not available (the openvswitch module is not loaded)\n")
		} else {
			fmt.Fprintf(&b, "kernel datapath: not available (%s)\n", errorMessage(err))
		}
		return b.String()
	}
	defer c.Close()
	fams := c.Families()
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("kernel datapath families:")
	for _, n := range names {
		fmt.Fprintf(&b, " %s(v%d)", n, fams[n])
	}
	b.WriteString("\n")
	dps, err := c.Datapaths()
	if err != nil {
		fmt.Fprintf(&b, "kernel datapaths: %s\n", errorMessage(err))
		return b.String()
	}
	sort.Slice(dps, func(i, j int) bool { return dps[i].Name < dps[j].Name })
	for _, d := range dps {
		fmt.Fprintf(&b, "system@%s: user features %s (upcalls %s)", d.Name, formatFeatures(d.UserFeatures), d.UpcallMode())
		if d.HasMasksCacheSize {
			fmt.Fprintf(&b, ", masks-cache size %d", d.MasksCacheSize)
		}
		if n, ok := kernelMaxMeters(d.Name); ok {
			fmt.Fprintf(&b, ", meters max %d", n)
		}
		b.WriteString("\n")
	}
	if len(dps) == 0 {
		b.WriteString("kernel datapaths: none (the user features are negotiated when one is created)\n")
	}
	return b.String()
}

// kernelMaxMeters is how many meters the kernel datapath name may have,
// if it says (its ovs_meter family answers).
func kernelMaxMeters(name string) (uint32, bool) {
	d, err := genl.Open(name)
	if err != nil {
		return 0, false
	}
	defer d.Close()
	mf, err := d.MeterFeatures(context.Background())
	if err != nil {
		return 0, false
	}
	return mf.MaxMeters, true
}

// printVersion is -V/--version: dpctl's build (version, commit, Go
// version, from internal/buildinfo) and the kernel's datapath features.
func printVersion(_ context.Context, w io.Writer) error {
	var b strings.Builder
	// One line as upcalld --version prints it ("dpctl v0.1.0 (commit
	// 1d04bf8c0ffe, go1.26.8)"), then the kernel's side.
	fmt.Fprintf(&b, "dpctl %s\n", buildinfo.Get())
	b.WriteString(kernelFeatures())
	_, err := io.WriteString(w, b.String())
	return err
}

// parseFeatures parses add-dp's -V/--features "[VERSION:]FEATURES":
// VERSION, when given, must be the ovs_datapath family version (2) the
// feature bits are defined for; FEATURES is per-cpu (per-CPU upcall
// dispatch), per-vport (per-vport upcall PIDs), a list of feature names
// joined by "," or "+" (unaligned, vport-pids, tc-recirc-sharing,
// dispatch-upcall-per-cpu), or a number (0x... in hex).
func parseFeatures(spec string) (uint32, error) {
	s := spec
	if v, rest, ok := strings.Cut(s, ":"); ok {
		n, err := strconv.ParseUint(v, 0, 8)
		if err != nil {
			return 0, fmt.Errorf("features %q: version %q is not a number", spec, v)
		}
		if n != genl.DatapathFamilyVersion {
			return 0, fmt.Errorf("features %q: version %d is not the ovs_datapath family version (%d)", spec, n, genl.DatapathFamilyVersion)
		}
		s = rest
	}
	switch s {
	case "":
		return 0, fmt.Errorf("features %q: no features given", spec)
	case "per-cpu":
		return genl.FeatureUnaligned | genl.FeatureDispatchUpcallPerCPU, nil
	case "per-vport":
		return genl.FeatureUnaligned | genl.FeatureVportPIDs, nil
	}
	if n, err := strconv.ParseUint(s, 0, 32); err == nil {
		return uint32(n), nil
	}
	var f uint32
	for _, name := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '+' }) {
		found := false
		for _, fn := range featureNames {
			if fn.name == name {
				f |= fn.bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("features %q: unknown feature %q (want per-cpu, per-vport, a number, or names among unaligned, vport-pids, tc-recirc-sharing, dispatch-upcall-per-cpu)", spec, name)
		}
	}
	return f, nil
}
