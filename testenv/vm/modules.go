package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Module is one loadable kernel module found in a modules tree.
type Module struct {
	// Name is the module's canonical name (dashes replaced by underscores).
	Name string
	// Path is the absolute path of the .ko file.
	Path string
}

// ModuleTree indexes the modules of one kernel release, as extracted from a
// Debian linux-image package (which ships no modules.dep: dependencies are
// read from each module's .modinfo section).
type ModuleTree struct {
	// Dir is the /lib/modules/<release> directory.
	Dir     string
	byName  map[string]string // canonical name -> path
	builtin map[string]bool   // canonical names built into the kernel
	deps    map[string][]string
}

// CanonicalModuleName returns the name the kernel uses for a module:
// without directory or .ko suffix, dashes replaced by underscores.
func CanonicalModuleName(s string) string {
	s = filepath.Base(s)
	for _, suf := range []string{".ko.xz", ".ko.zst", ".ko.gz", ".ko"} {
		s = strings.TrimSuffix(s, suf)
	}
	return strings.ReplaceAll(s, "-", "_")
}

// OpenModuleTree indexes the .ko files under dir (a /lib/modules/<release>
// directory) and reads its modules.builtin list if present.
func OpenModuleTree(dir string) (*ModuleTree, error) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	t := &ModuleTree{Dir: dir, byName: map[string]string{}, builtin: map[string]bool{}, deps: map[string][]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if strings.Contains(d.Name(), ".ko") && (strings.HasSuffix(d.Name(), ".ko") ||
			strings.HasSuffix(d.Name(), ".ko.xz") || strings.HasSuffix(d.Name(), ".ko.zst") ||
			strings.HasSuffix(d.Name(), ".ko.gz")) {
			t.byName[CanonicalModuleName(d.Name())] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("indexing kernel modules in %s: %w", dir, err)
	}
	if len(t.byName) == 0 {
		return nil, fmt.Errorf("no kernel modules (*.ko) found under %s", dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		parseBuiltin(t.builtin, b)
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading modules.builtin: %w", err)
	}
	return t, nil
}

func parseBuiltin(into map[string]bool, b []byte) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" {
			into[CanonicalModuleName(line)] = true
		}
	}
}

// Has reports whether the module exists as a loadable module.
func (t *ModuleTree) Has(name string) bool {
	_, ok := t.byName[CanonicalModuleName(name)]
	return ok
}

// Builtin reports whether the module is built into the kernel.
func (t *ModuleTree) Builtin(name string) bool { return t.builtin[CanonicalModuleName(name)] }

// Depends returns the modules that name depends on, from its .modinfo
// "depends=" entry.
func (t *ModuleTree) Depends(name string) ([]string, error) {
	name = CanonicalModuleName(name)
	if d, ok := t.deps[name]; ok {
		return d, nil
	}
	p, ok := t.byName[name]
	if !ok {
		return nil, fmt.Errorf("module %s not found under %s", name, t.Dir)
	}
	info, err := readModinfo(p)
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, kv := range info {
		if v, ok := strings.CutPrefix(kv, "depends="); ok {
			for _, d := range strings.Split(v, ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, CanonicalModuleName(d))
				}
			}
		}
	}
	t.deps[name] = deps
	return deps, nil
}

// readModinfo returns the NUL-separated key=value strings of a module's
// .modinfo section.
func readModinfo(path string) ([]string, error) {
	if !strings.HasSuffix(path, ".ko") {
		return nil, fmt.Errorf("module %s is compressed; only uncompressed .ko files are supported", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading module %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("module %s has no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .modinfo of %s: %w", path, err)
	}
	var out []string
	for _, s := range bytes.Split(data, []byte{0}) {
		if len(s) > 0 {
			out = append(out, string(s))
		}
	}
	return out, nil
}

// LoadOrder returns the modules to insmod, dependencies first, so that every
// module in want (and in optional, when present) gets loaded. Modules built
// into the kernel are left out. A missing module from want is an error; a
// missing one from optional is ignored.
func (t *ModuleTree) LoadOrder(want, optional []string) ([]Module, error) {
	var order []Module
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle: %s -> %s", strings.Join(chain, " -> "), name)
		case 2:
			return nil
		}
		if t.Builtin(name) {
			state[name] = 2
			return nil
		}
		p, ok := t.byName[name]
		if !ok {
			if len(chain) > 0 {
				return fmt.Errorf("module %s (needed by %s) not found under %s", name, chain[len(chain)-1], t.Dir)
			}
			return fmt.Errorf("module %s not found under %s", name, t.Dir)
		}
		state[name] = 1
		deps, err := t.Depends(name)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, Module{Name: name, Path: p})
		return nil
	}
	for _, w := range want {
		if err := visit(CanonicalModuleName(w), nil); err != nil {
			return nil, err
		}
	}
	for _, o := range optional {
		o = CanonicalModuleName(o)
		if !t.Has(o) {
			continue
		}
		if err := visit(o, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// RequiredModules are the modules the guest cannot work without, in the
// order they are wanted; their dependencies are added by LoadOrder.
// crc32c_generic comes first because libcrc32c needs a crc32c
// implementation at load time (a soft dependency that .modinfo does not
// force) and the guest has no modprobe to load it on demand.
var RequiredModules = []string{
	"crc32c_generic",
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p",
	"openvswitch", "veth", "tun",
}

// OptionalModules are loaded when the kernel package has them: tunnel
// devices and the openvswitch vport modules for them (the kernel would
// request_module them on demand, which the guest cannot serve), VLANs and
// a few devices that tests may use.
var OptionalModules = []string{
	"8021q", "udp_tunnel", "ip6_udp_tunnel", "ip_tunnel", "gre", "ip_gre", "ip6_gre",
	"vxlan", "geneve", "vport_vxlan", "vport_geneve", "vport_gre",
	"nf_conntrack_netlink", "nf_conntrack_ftp", "nf_conntrack_tftp", "nf_nat_ftp", "nf_nat_tftp",
	"bridge", "dummy", "af_packet",
	// For the userspace datapath's netdev ports, which move an outer VLAN tag
	// out of band with a tc egress program, as the kernel datapath sends it.
	"sch_ingress", "cls_bpf",
}
