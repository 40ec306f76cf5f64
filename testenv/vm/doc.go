// Package vm runs a test binary against a real Linux kernel that has the
// openvswitch module, for use as `go test -exec` (see testenv/vmrun).
//
// When the host kernel already has the module, the binary runs directly.
// Otherwise Run boots Debian's kernel (fetched into a cache directory by
// scripts/vm/fetch-kernel.sh) under qemu-system-x86_64 with TCG, with a
// busybox initramfs that loads the modules, shares the host's root file
// system read-only over 9p, shares the test binary's directory, the working
// directory and the Go build cache read-write at the same paths, chroots into
// the host root and runs the binary there with the same arguments,
// environment and working directory. The binary's standard output and error
// are streamed back over virtio serial ports, and its exit status is
// returned.
package vm
