package vm

import (
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes a cpio archive in the "newc" format that the kernel
// unpacks as an initramfs.
type cpioWriter struct {
	w     io.Writer
	ino   uint32
	off   int64
	err   error
	names map[string]bool
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, ino: 1, names: map[string]bool{}}
}

const (
	cpioModeDir     = 0o040000
	cpioModeFile    = 0o100000
	cpioModeSymlink = 0o120000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	if err != nil {
		c.err = fmt.Errorf("writing cpio archive: %w", err)
	}
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) error {
	if c.err != nil {
		return c.err
	}
	name = strings.TrimPrefix(name, "/")
	if name == "" || strings.Contains(name, "\x00") {
		return fmt.Errorf("cpio: invalid entry name %q", name)
	}
	if name != "TRAILER!!!" {
		if c.names[name] {
			return fmt.Errorf("cpio: duplicate entry %q", name)
		}
		c.names[name] = true
	}
	nlink := 1
	if mode&0o170000 == cpioModeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.ino++
	c.write([]byte(hdr))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
	c.write(data)
	c.pad()
	return c.err
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) error {
	return c.entry(name, cpioModeDir|perm, nil)
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, cpioModeFile|perm, data)
}

// Symlink adds a symbolic link name -> target.
func (c *cpioWriter) Symlink(name, target string) error {
	return c.entry(name, cpioModeSymlink|0o777, []byte(target))
}

// Close writes the trailer.
func (c *cpioWriter) Close() error {
	return c.entry("TRAILER!!!", 0, nil)
}
