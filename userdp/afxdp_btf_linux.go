package userdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// vmlinuxBTF is where the kernel publishes its own BTF type information.
const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

// btfFuncID returns the BTF type id of the kernel function name (a
// BTF_KIND_FUNC in the kernel's BTF), which a BPF program calls as a
// kfunc.
func btfFuncID(name string) (uint32, error) {
	data, err := os.ReadFile(vmlinuxBTF)
	if err != nil {
		return 0, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	id, err := findBTFFunc(data, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", vmlinuxBTF, err)
	}
	return id, nil
}

// BTF kinds (include/uapi/linux/btf.h) and the size of what follows a
// btf_type of each kind: fixed, or per vlen entry.
var btfKindExtra = [20]struct{ fixed, perVlen int }{
	1:  {4, 0},  // INT
	3:  {12, 0}, // ARRAY
	4:  {0, 12}, // STRUCT
	5:  {0, 12}, // UNION
	6:  {0, 8},  // ENUM
	13: {0, 8},  // FUNC_PROTO
	14: {4, 0},  // VAR
	15: {0, 12}, // DATASEC
	17: {4, 0},  // DECL_TAG
	19: {0, 12}, // ENUM64
}

const btfKindFunc = 12

// findBTFFunc looks name up among the BTF_KIND_FUNC types of the raw BTF
// blob data (native byte order, as the running kernel writes it).
func findBTFFunc(data []byte, name string) (uint32, error) {
	le := binary.NativeEndian
	if len(data) < 24 || le.Uint16(data) != 0xeb9f {
		return 0, errors.New("not BTF (bad magic or too short)")
	}
	hdrLen := le.Uint32(data[4:])
	typeOff, typeLen := le.Uint32(data[8:]), le.Uint32(data[12:])
	strOff, strLen := le.Uint32(data[16:]), le.Uint32(data[20:])
	in := func(off, n uint32) bool { return uint64(hdrLen)+uint64(off)+uint64(n) <= uint64(len(data)) }
	if hdrLen < 24 || !in(typeOff, typeLen) || !in(strOff, strLen) {
		return 0, fmt.Errorf("BTF sections (header %d, types %d+%d, strings %d+%d) outside its %d bytes", hdrLen, typeOff, typeLen, strOff, strLen, len(data))
	}
	types := data[hdrLen+typeOff : hdrLen+typeOff+typeLen]
	strs := data[hdrLen+strOff : hdrLen+strOff+strLen]
	for id, off := uint32(1), 0; off < len(types); id++ {
		if off+12 > len(types) {
			return 0, fmt.Errorf("BTF type %d truncated at offset %d", id, off)
		}
		nameOff, info := le.Uint32(types[off:]), le.Uint32(types[off+4:])
		kind, vlen := int(info>>24&0x1f), int(info&0xffff)
		if kind == 0 || kind >= len(btfKindExtra) {
			return 0, fmt.Errorf("BTF type %d at offset %d: unknown kind %d", id, off, kind)
		}
		if kind == btfKindFunc && int(nameOff) < len(strs) {
			s := strs[nameOff:]
			if len(s) > len(name) && string(s[:len(name)]) == name && s[len(name)] == 0 {
				return id, nil
			}
		}
		off += 12 + btfKindExtra[kind].fixed + vlen*btfKindExtra[kind].perVlen
	}
	return 0, fmt.Errorf("no function %s", name)
}
