package hostfs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ACS is a function's Access Control Services extended capability (PCIe
// Base Specification, "ACS Extended Capability"; the bits are
// PCI_ACS_* of include/uapi/linux/pci_regs.h). Cap says which controls
// the function implements, Ctl which are enabled.
type ACS struct {
	Cap, Ctl uint16
}

// ACS control bits.
const (
	ACSSourceValidation   = 0x0001 // SV
	ACSTranslationBlock   = 0x0002 // TB
	ACSRequestRedirect    = 0x0004 // RR: peer-to-peer requests go up to the root complex
	ACSCompletionRedirect = 0x0008 // CR: peer-to-peer completions go up too
	ACSUpstreamForwarding = 0x0010 // UF
	ACSEgressControl      = 0x0020 // EC
	ACSDirectTranslated   = 0x0040 // DT: translated requests may go peer-to-peer
)

// Redirects reports whether the function sends peer-to-peer requests or
// completions up to the root complex (RR or CR enabled): GPUDirect RDMA
// through it then crosses the root complex instead of the switch.
func (a ACS) Redirects() bool { return a.Ctl&(ACSRequestRedirect|ACSCompletionRedirect) != 0 }

// Names lists the enabled controls by their lspci names ("SrcValid",
// "ReqRedir", …), in bit order.
func (a ACS) Names() []string {
	names := []string{"SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans"}
	var out []string
	for i, n := range names {
		if a.Ctl&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// ErrNoExtendedConfig reports config space that ends before the extended
// capabilities (offset 0x100): a conventional PCI function, or a read by
// a user other than root, which the kernel stops at 64 bytes.
var ErrNoExtendedConfig = fmt.Errorf("%w: config space ends before the extended capabilities (needs root, or not PCI Express)", ErrParse)

// ErrNoACS reports extended config space without an ACS capability.
var ErrNoACS = errors.New("no ACS capability")

// ACSOffset is where a function's ACS capability lies in its config
// space, found by walking the extended capability list from 0x100.
func ACSOffset(b []byte) (int, error) {
	const (
		extStart = 0x100
		acsID    = 0x000d
		maxWalk  = (4096 - extStart) / 4 // a longer list loops
	)
	if len(b) < extStart+8 {
		return 0, ErrNoExtendedConfig
	}
	off := extStart
	for range maxWalk {
		if off < extStart || off+8 > len(b) {
			return 0, ErrNoACS
		}
		h := binary.LittleEndian.Uint32(b[off:])
		if h == 0 || h == 0xffffffff {
			return 0, ErrNoACS
		}
		if h&0xffff == acsID {
			return off, nil
		}
		off = int(h>>20) &^ 3
		if off == 0 {
			return 0, ErrNoACS
		}
	}
	return 0, fmt.Errorf("%w: extended capability list loops", ErrParse)
}

// ParseACS decodes the ACS capability of a config-space dump (sysfs
// "config", as lspci reads it). Hand-written, as ParsePCIConfig is.
func ParseACS(b []byte) (ACS, error) {
	off, err := ACSOffset(b)
	if err != nil {
		return ACS{}, err
	}
	return ACS{Cap: binary.LittleEndian.Uint16(b[off+4:]), Ctl: binary.LittleEndian.Uint16(b[off+6:])}, nil
}

// DevCtlOffset is where the Device Control register of a function's PCI
// Express capability lies in its config space (its bits 14:12 are MRRS).
func DevCtlOffset(b []byte) (int, error) {
	off, err := pcieCapOffset(b)
	if err != nil {
		return 0, err
	}
	return off + 0x08, nil
}

// pcieCapOffset walks the capability list to the PCI Express capability.
func pcieCapOffset(b []byte) (int, error) {
	const (
		statusReg   = 0x06
		capListBit  = 0x10
		capPtrReg   = 0x34
		pcieCapID   = 0x10
		maxCapsWalk = 48
	)
	if len(b) < 256 || binary.LittleEndian.Uint16(b[statusReg:])&capListBit == 0 {
		return 0, ErrNoPCIeCap
	}
	off := int(b[capPtrReg] &^ 3)
	for range maxCapsWalk {
		if off < 0x40 || off+0x14 > len(b) {
			return 0, ErrNoPCIeCap
		}
		if b[off] == pcieCapID {
			return off, nil
		}
		off = int(b[off+1] &^ 3)
	}
	return 0, fmt.Errorf("%w: capability list loops", ErrParse)
}

// MRRSCode is the Device Control encoding of a Max_Read_Request_Size in
// bytes (128 → 0 … 4096 → 5), or -1 for a size PCIe has no code for.
func MRRSCode(bytes int) int {
	for code, size := 0, 128; code <= 5; code, size = code+1, size*2 {
		if size == bytes {
			return code
		}
	}
	return -1
}

// WithMRRS returns the Device Control register devCtl with its
// Max_Read_Request_Size field (bits 14:12) set to bytes, the other bits
// kept.
func WithMRRS(devCtl uint16, bytes int) (uint16, error) {
	code := MRRSCode(bytes)
	if code < 0 {
		return 0, fmt.Errorf("MRRS %d: not a PCIe read request size (128, 256, 512, 1024, 2048 or 4096)", bytes)
	}
	return devCtl&^(7<<12) | uint16(code)<<12, nil
}

// MRRSOf is the Max_Read_Request_Size in bytes of a Device Control value.
func MRRSOf(devCtl uint16) int { return 128 << ((devCtl >> 12) & 7) }
