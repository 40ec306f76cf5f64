package vm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// initramfsVersion changes whenever the layout of the initramfs changes, so
// that cached images are rebuilt.
const initramfsVersion = "ovsdp-initramfs-1"

// checkStaticBusybox verifies that path is a statically linked ELF
// executable (the initramfs has no dynamic loader).
func checkStaticBusybox(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w (install busybox-static: scripts/vm/fetch-kernel.sh)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("busybox %s is dynamically linked; the initramfs needs busybox-static (scripts/vm/fetch-kernel.sh installs it)", path)
		}
	}
	return nil
}

// initramfsKey returns a digest of everything that goes into the image.
func initramfsKey(busybox string, mods []Module) (string, error) {
	h := sha256.New()
	io.WriteString(h, initramfsVersion+"\x00"+initScript+"\x00")
	files := []string{busybox}
	for _, m := range mods {
		files = append(files, m.Path)
		io.WriteString(h, m.Name+"\x00")
	}
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("initramfs input: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// writeInitramfs writes a gzip-compressed newc cpio image with busybox,
// /init and the modules (flat in /lib/modules, with /modules.order).
func writeInitramfs(w io.Writer, busybox string, mods []Module) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	c := newCPIOWriter(zw)
	for _, d := range []string{"bin", "dev", "proc", "sys", "host", "ovsdp", "lib", "lib/modules", "tmp"} {
		if err := c.Dir(d, 0o755); err != nil {
			return err
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("reading busybox: %w", err)
	}
	if err := c.File("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	if err := c.Symlink("bin/sh", "busybox"); err != nil {
		return err
	}
	if err := c.File("init", 0o755, []byte(initScript)); err != nil {
		return err
	}
	var order bytes.Buffer
	for _, m := range mods {
		data, err := os.ReadFile(m.Path)
		if err != nil {
			return fmt.Errorf("reading module %s: %w", m.Name, err)
		}
		if err := c.File("lib/modules/"+m.Name+".ko", 0o644, data); err != nil {
			return err
		}
		order.WriteString(m.Name + "\n")
	}
	if err := c.File("modules.order", 0o644, order.Bytes()); err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// ensureInitramfs returns the path of an initramfs for mods, building it in
// cacheDir (atomically) when missing. When cacheDir is not writable it
// builds into fallbackDir instead.
func ensureInitramfs(cacheDir, fallbackDir, busybox string, mods []Module) (string, error) {
	if err := checkStaticBusybox(busybox); err != nil {
		return "", err
	}
	key, err := initramfsKey(busybox, mods)
	if err != nil {
		return "", err
	}
	name := "initramfs-" + key + ".cpio.gz"
	path := filepath.Join(cacheDir, name)
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return path, nil
	}
	build := func(dir string) (string, error) {
		tmp, err := os.CreateTemp(dir, ".initramfs-*")
		if err != nil {
			return "", err
		}
		defer os.Remove(tmp.Name())
		if err := writeInitramfs(tmp, busybox, mods); err != nil {
			tmp.Close()
			return "", fmt.Errorf("building initramfs: %w", err)
		}
		if err := tmp.Chmod(0o644); err != nil {
			tmp.Close()
			return "", fmt.Errorf("building initramfs: %w", err)
		}
		if err := tmp.Close(); err != nil {
			return "", fmt.Errorf("building initramfs: %w", err)
		}
		dst := filepath.Join(dir, name)
		if err := os.Rename(tmp.Name(), dst); err != nil {
			return "", fmt.Errorf("building initramfs: %w", err)
		}
		return dst, nil
	}
	p, err := build(cacheDir)
	if err == nil {
		removeOldInitramfs(cacheDir, name)
		return p, nil
	}
	if strings.Contains(err.Error(), "building initramfs") {
		return "", err
	}
	return build(fallbackDir)
}

// removeOldInitramfs deletes cached images other than keep that are more
// than a day old (younger ones may belong to a runner built from another
// version of this package that is running right now).
func removeOldInitramfs(dir, keep string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "initramfs-") || e.Name() == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
