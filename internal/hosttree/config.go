package hosttree

import (
	"encoding/binary"
	"fmt"
)

// Offsets of the capabilities written in every config space: power
// management at 0x40, PCI Express at 0x60 (a version-2 capability is 0x3c
// bytes long), MSI-X at 0x9c for endpoints; the only extended capability
// ever written is ACS, at 0x100.
const (
	capPM   = 0x40
	capPCIe = 0x60
	capMSIX = 0x9c
)

// PCI Express capability register offsets (include/uapi/linux/pci_regs.h).
const (
	expFlags   = 0x02
	expDevCap  = 0x04
	expDevCtl  = 0x08
	expLnkCap  = 0x0c
	expLnkCtl  = 0x10
	expLnkSta  = 0x12
	expSltCap  = 0x14
	expLnkCap2 = 0x2c
	expLnkCtl2 = 0x30
)

// configSpace builds a 4096-byte config space: a type-0 header for an
// endpoint or a type-1 header for a bridge (whose secondary and subordinate
// bus are sec's bus), the capability-list bit set, the capability pointer
// at 0x34, and a PCI Express capability whose DevCap/DevCtl carry the max
// payload and read request sizes and whose LnkCap/LnkSta carry the same max
// and current speed and width as the sysfs files. The one extended
// capability written is ACS, where d.ACS asks for it; otherwise 0x100
// reads zero (no extended capability).
func configSpace(d PCIDevice, isBridge bool, self, sec bdf, vectors int) ([]byte, error) {
	maxCode, err := speedCode(d.MaxSpeed)
	if err != nil {
		return nil, err
	}
	curCode, err := speedCode(d.CurSpeed)
	if err != nil {
		return nil, err
	}
	mpsCap, err := sizeCode(d.MPSSupported)
	if err != nil {
		return nil, err
	}
	mps, err := sizeCode(d.MPS)
	if err != nil {
		return nil, err
	}
	mrrs, err := sizeCode(d.MRRS)
	if err != nil {
		return nil, err
	}
	if d.MaxWidth < 1 || d.MaxWidth > 32 || d.CurWidth < 1 || d.CurWidth > 32 {
		return nil, fmt.Errorf("link width %d/%d out of range", d.MaxWidth, d.CurWidth)
	}
	c := make([]byte, 4096)
	le16 := func(off int, v uint16) { binary.LittleEndian.PutUint16(c[off:], v) }
	le32 := func(off int, v uint32) { binary.LittleEndian.PutUint32(c[off:], v) }

	le16(0x00, d.Vendor)
	le16(0x02, d.Device)
	le16(0x06, 0x0010) // status: capabilities list
	c[0x08] = d.Revision
	c[0x09], c[0x0a], c[0x0b] = byte(d.Class), byte(d.Class>>8), byte(d.Class>>16)
	c[0x0c] = 0x10 // cache line size: 64 bytes
	var header byte
	if d.MultiFunction {
		header = 0x80
	}
	c[0x34] = capPM
	c[0x3c] = byte(d.LegacyIRQ)
	c[0x3d] = 0x01 // INTA
	if isBridge {
		le16(0x04, 0x0407) // I/O, memory, bus master; INTx disabled
		c[0x0e] = header | 0x01
		c[0x18], c[0x19], c[0x1a] = byte(self.bus), byte(sec.bus), byte(sec.bus)
		c[0x1c], c[0x1d] = 0xf0, 0x00 // I/O window closed
		le16(0x20, 0xfc00)            // memory window fc000000-fcffffff
		le16(0x22, 0xfcf0)
		le16(0x24, 0xfff1) // prefetchable window closed (base > limit), 64-bit
		le16(0x26, 0x0001)
		le16(0x3e, 0x0012) // bridge control: SERR#, ISA
	} else {
		le16(0x04, 0x0406) // memory, bus master; INTx disabled
		c[0x0e] = header
		// BAR0/1: 64-bit prefetchable memory above 4 GiB.
		le32(0x10, 0x0000000c)
		le32(0x14, 0x00000080|uint32(self.bus))
		le16(0x2c, d.SubsystemVendor)
		le16(0x2e, d.SubsystemDevice)
	}

	// Power management: version 3, D0, No_Soft_Reset.
	c[capPM], c[capPM+1] = 0x01, capPCIe
	le16(capPM+2, 0x0003)
	le16(capPM+4, 0x0008)

	// PCI Express, version 2.
	p := capPCIe
	c[p] = 0x10
	var portType, slot uint16        // endpoint, no slot
	devCap := uint32(mpsCap) | 1<<15 // role-based error reporting
	devCtl := mps<<5 | mrrs<<12 | 0x0010 | 0x0100 | 0x0800
	lnkCap := uint32(maxCode) | uint32(d.MaxWidth)<<4 | uint32(d.Port)<<24
	lnkSta := curCode | uint16(d.CurWidth)<<4 | 1<<12 // slot clock configuration
	if isBridge {
		portType, slot = 4, 1 // root port with a slot
		switch d.PortType {
		case 5: // switch upstream port: no slot
			portType, slot = 5, 0
		case 6: // switch downstream port
			portType = 6
		}
		lnkCap |= 1 << 20 // data link layer link active reporting
		lnkSta |= 1 << 13 // data link layer link active
		devCtl = mps<<5 | mrrs<<12 | 0x0010
		le32(p+expSltCap, uint32(d.Port)<<19)
		c[p+1] = 0x00
	} else {
		devCap |= 1 << 28 // function level reset
		c[p+1] = capMSIX
	}
	le16(p+expFlags, 0x0002|portType<<4|slot<<8)
	le32(p+expDevCap, devCap)
	le16(p+expDevCtl, devCtl)
	le32(p+expLnkCap, lnkCap)
	le16(p+expLnkCtl, 0x0040) // common clock configuration
	le16(p+expLnkSta, lnkSta)
	le32(p+expLnkCap2, uint32((1<<maxCode)-1)<<1) // supported link speeds vector
	le16(p+expLnkCtl2, maxCode)                   // target link speed

	if a := d.ACS; a != nil {
		// ACS extended capability (ID 0x000d, version 1), the last in
		// the list.
		le32(0x100, 0x0001000d)
		le16(0x104, a.Cap)
		le16(0x106, a.Ctl)
	}

	if !isBridge {
		// MSI-X: enabled, table in BAR0 at 0x2000, PBA at 0x3000.
		size := max(vectors, 1)
		c[capMSIX], c[capMSIX+1] = 0x11, 0x00
		le16(capMSIX+2, 0x8000|uint16(size-1))
		le32(capMSIX+4, 0x2000)
		le32(capMSIX+8, 0x3000)
	}
	return c, nil
}
