package hostfs

import (
	"encoding/binary"
	"errors"
	"testing"
)

// config builds a 256-byte config space: PM capability at 0x40 pointing
// at a PCIe capability at 0x70.
func config(mpsCode, mrrsCode, capSpeed, capWidth, staSpeed, staWidth int) []byte {
	b := make([]byte, 256)
	binary.LittleEndian.PutUint16(b[0:], 0x15b3)
	binary.LittleEndian.PutUint16(b[2:], 0x1017)
	binary.LittleEndian.PutUint16(b[6:], 0x0010)
	b[0x34] = 0x40
	b[0x40], b[0x41] = 0x01, 0x70
	c := b[0x70:]
	c[0], c[1] = 0x10, 0x00
	binary.LittleEndian.PutUint16(c[2:], 0x0002) // version 2, endpoint
	binary.LittleEndian.PutUint32(c[4:], 0x2)    // MPS supported 512
	binary.LittleEndian.PutUint16(c[8:], uint16(mpsCode<<5|mrrsCode<<12))
	binary.LittleEndian.PutUint32(c[0xC:], uint32(capSpeed|capWidth<<4))
	binary.LittleEndian.PutUint16(c[0x12:], uint16(staSpeed|staWidth<<4))
	return b
}

func TestParsePCIConfig(t *testing.T) {
	got, err := ParsePCIConfig(config(1, 2, 3, 16, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	want := PCIeCap{PortType: 0, MPSSupported: 512, MPS: 256, MRRS: 512, LinkCapGTs: 8, LinkCapWidth: 16, LinkStaGTs: 8, LinkStaWidth: 4}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParsePCIConfigUnprivileged(t *testing.T) {
	// Without root the kernel returns only the standard 64-byte header.
	if _, err := ParsePCIConfig(config(1, 2, 3, 16, 3, 4)[:64]); !errors.Is(err, ErrNoPCIeCap) {
		t.Errorf("64-byte config: %v", err)
	}
	if _, err := ParsePCIConfig(make([]byte, 10)); !errors.Is(err, ErrParse) {
		t.Errorf("10-byte config: %v", err)
	}
}

func TestParsePCIConfigLoop(t *testing.T) {
	b := config(1, 2, 3, 16, 3, 4)
	b[0x40], b[0x41] = 0x01, 0x40 // points at itself
	if _, err := ParsePCIConfig(b); err == nil {
		t.Error("a looping capability list was accepted")
	}
}

// FuzzParsePCIConfig: config space from a snapshot is untrusted.
func FuzzParsePCIConfig(f *testing.F) {
	f.Add(config(1, 2, 3, 16, 3, 4))
	f.Add(config(0, 5, 4, 8, 1, 1)[:64])
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParsePCIConfig(b)
		if err != nil {
			return
		}
		if c.MPS < 128 || c.MPS > 16384 || c.LinkCapWidth > 63 {
			t.Fatalf("decoded out of range: %+v", c)
		}
	})
}
