package hostfs

import (
	"encoding/binary"
	"fmt"
)

// PCIeCap holds the fields of a function's PCI Express capability that
// sysfs does not expose as attributes (MPS, MRRS), plus the link fields
// for cross-checking. Speeds are in GT/s, sizes in bytes.
type PCIeCap struct {
	PortType     int // Device/Port Type: 0 endpoint, 4 root port, 5/6 switch ports …
	MPSSupported int // Device Capabilities: Max_Payload_Size Supported
	MPS          int // Device Control: Max_Payload_Size in use
	MRRS         int // Device Control: Max_Read_Request_Size
	LinkCapGTs   float64
	LinkCapWidth int
	LinkStaGTs   float64
	LinkStaWidth int
}

// ErrNoPCIeCap reports config space without a PCI Express capability. An
// unprivileged read of sysfs "config" returns only the first 64 bytes,
// which never reach the capability list: reading it needs root.
var ErrNoPCIeCap = fmt.Errorf("%w: no PCI Express capability in config space", ErrParse)

// ParsePCIConfig finds the PCI Express capability (ID 0x10) by walking the
// capability list of a config-space dump (sysfs "config", as lspci reads
// it) and decodes it. Hand-written: the Go libraries that read PCI config
// space want live device access, not bytes from a snapshot.
func ParsePCIConfig(b []byte) (PCIeCap, error) {
	const (
		statusReg   = 0x06
		capListBit  = 0x10
		capPtrReg   = 0x34
		pcieCapID   = 0x10
		maxCapsWalk = 48 // (256-64)/4: a list longer than this loops
	)
	if len(b) < 64 {
		return PCIeCap{}, fmt.Errorf("%w: config space is %d bytes, want 64 or more", ErrParse, len(b))
	}
	if len(b) < 256 || binary.LittleEndian.Uint16(b[statusReg:])&capListBit == 0 {
		return PCIeCap{}, ErrNoPCIeCap
	}
	off := int(b[capPtrReg] &^ 3)
	for range maxCapsWalk {
		if off < 0x40 || off+0x14 > len(b) {
			return PCIeCap{}, ErrNoPCIeCap
		}
		if b[off] == pcieCapID {
			return decodePCIeCap(b[off:]), nil
		}
		off = int(b[off+1] &^ 3)
	}
	return PCIeCap{}, fmt.Errorf("%w: capability list loops", ErrParse)
}

func decodePCIeCap(c []byte) PCIeCap {
	u16 := func(o int) uint16 { return binary.LittleEndian.Uint16(c[o:]) }
	u32 := func(o int) uint32 { return binary.LittleEndian.Uint32(c[o:]) }
	devCap, devCtl := u32(0x04), u16(0x08)
	lnkCap, lnkSta := u32(0x0C), u16(0x12)
	return PCIeCap{
		PortType:     int(u16(0x02)>>4) & 0xF,
		MPSSupported: 128 << (devCap & 7),
		MPS:          128 << ((devCtl >> 5) & 7),
		MRRS:         128 << ((devCtl >> 12) & 7),
		LinkCapGTs:   speedCode(int(lnkCap & 0xF)),
		LinkCapWidth: int(lnkCap>>4) & 0x3F,
		LinkStaGTs:   speedCode(int(lnkSta & 0xF)),
		LinkStaWidth: int(lnkSta>>4) & 0x3F,
	}
}

// speedCode maps the Link Capabilities/Status speed field to GT/s
// (PCIe Base Spec: an index into Supported Link Speeds, which every
// device fills contiguously from 2.5 GT/s up).
func speedCode(c int) float64 {
	switch c {
	case 1:
		return 2.5
	case 2:
		return 5
	case 3:
		return 8
	case 4:
		return 16
	case 5:
		return 32
	case 6:
		return 64
	}
	return 0
}
