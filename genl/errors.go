package genl

import "errors"

var (
	// ErrModuleNotLoaded is returned (wrapped) when the kernel has no
	// Open vSwitch generic netlink families. It matches os.ErrNotExist
	// through the wrapped netlink error as well.
	ErrModuleNotLoaded = errors.New("the openvswitch kernel module is not loaded (try: modprobe openvswitch)")

	// ErrNotSupported is returned on operating systems other than Linux.
	ErrNotSupported = errors.New("genl: the kernel datapath is not supported on this OS (Linux only)")

	// ErrDumpInterrupted is returned (wrapped) after a dump during which
	// the kernel's table changed (NLM_F_DUMP_INTR): entries may have been
	// missed or seen twice.
	ErrDumpInterrupted = errors.New("genl: dump interrupted by a concurrent change (NLM_F_DUMP_INTR)")

	// ErrFamilyMissing is returned (wrapped) by meter and conntrack-limit
	// commands when the kernel lacks that family.
	ErrFamilyMissing = errors.New("genl: the kernel does not have this generic netlink family")
)
