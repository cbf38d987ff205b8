package hostfs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// withACS extends config() to 4096 bytes with extended capabilities at
// 0x100: AER (ID 1) first, then ACS (ID 0x0d) with the given registers.
func withACS(capReg, ctl uint16) []byte {
	b := append(config(1, 2, 3, 16, 3, 4), make([]byte, 4096-256)...)
	binary.LittleEndian.PutUint32(b[0x100:], 0x0001|1<<16|0x148<<20) // AER, next at 0x148
	binary.LittleEndian.PutUint32(b[0x148:], 0x000d|1<<16)           // ACS, last
	binary.LittleEndian.PutUint16(b[0x14c:], capReg)
	binary.LittleEndian.PutUint16(b[0x14e:], ctl)
	return b
}

func TestParseACS(t *testing.T) {
	a, err := ParseACS(withACS(0x005f, 0x001d))
	if err != nil {
		t.Fatal(err)
	}
	if a.Cap != 0x005f || a.Ctl != 0x001d || !a.Redirects() || !slices.Equal(a.Names(), []string{"SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"}) {
		t.Errorf("ACS %+v %q", a, a.Names())
	}
	if a, _ := ParseACS(withACS(0x005f, 0x0001)); a.Redirects() {
		t.Error("source validation alone redirects")
	}
	if a, _ := ParseACS(withACS(0x005f, 0x0008)); !a.Redirects() {
		t.Error("completion redirect alone does not redirect")
	}
	noACS := withACS(0, 0)
	binary.LittleEndian.PutUint32(noACS[0x100:], 0x0001|1<<16) // AER, last
	for name, tt := range map[string]struct {
		b    []byte
		want error
	}{
		"unprivileged": {config(1, 2, 3, 16, 3, 4)[:64], ErrNoExtendedConfig},
		"conventional": {config(1, 2, 3, 16, 3, 4), ErrNoExtendedConfig},
		"no ACS":       {noACS, ErrNoACS},
		"zero list":    {make([]byte, 4096), ErrNoACS},
	} {
		if _, err := ParseACS(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", name, err, tt.want)
		}
	}
	loop := withACS(0, 0)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|1<<16|0x100<<20) // points at itself
	if _, err := ParseACS(loop); !errors.Is(err, ErrParse) {
		t.Errorf("a looping list: %v", err)
	}
}

func TestMRRS(t *testing.T) {
	b := config(1, 2, 3, 16, 3, 4) // MRRS code 2: 512 bytes
	off, err := DevCtlOffset(b)
	if err != nil || off != 0x78 {
		t.Fatalf("DevCtlOffset = %#x %v", off, err)
	}
	ctl := binary.LittleEndian.Uint16(b[off:])
	if MRRSOf(ctl) != 512 {
		t.Errorf("MRRSOf(%#x) = %d", ctl, MRRSOf(ctl))
	}
	got, err := WithMRRS(ctl, 4096)
	if err != nil || MRRSOf(got) != 4096 || got&^0x7000 != ctl&^0x7000 {
		t.Errorf("WithMRRS(%#x, 4096) = %#x %v", ctl, got, err)
	}
	if _, err := WithMRRS(ctl, 3000); err == nil {
		t.Error("MRRS 3000 accepted")
	}
	for bytes, code := range map[int]int{128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5, 8192: -1, 0: -1} {
		if MRRSCode(bytes) != code {
			t.Errorf("MRRSCode(%d) = %d, want %d", bytes, MRRSCode(bytes), code)
		}
	}
	if _, err := DevCtlOffset(b[:64]); !errors.Is(err, ErrNoPCIeCap) {
		t.Errorf("64 bytes: %v", err)
	}
}

// FuzzParseACS: config space from a snapshot is untrusted.
func FuzzParseACS(f *testing.F) {
	f.Add(withACS(0x005f, 0x001d))
	f.Add(config(1, 2, 3, 16, 3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		if off, err := ACSOffset(b); err == nil && (off < 0x100 || off+8 > len(b)) {
			t.Fatalf("ACS at %#x of %d bytes", off, len(b))
		}
		ParseACS(b)
		if off, err := DevCtlOffset(b); err == nil && off+2 > len(b) {
			t.Fatalf("DevCtl at %#x of %d bytes", off, len(b))
		}
	})
}

// TestWriteAt writes one register of a captured config file in place:
// the rest of the file stays, nothing is created, and no link leads the
// write out of the tree.
func TestWriteAt(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config(1, 2, 3, 16, 3, 4)
	if err := os.WriteFile(filepath.Join(dev, "config"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/bus/pci/devices"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0", filepath.Join(root, "sys/bus/pci/devices/0000:01:00.0")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sys/escape")); err != nil {
		t.Fatal(err)
	}
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if err := fs.WriteAt("sys/bus/pci/devices/0000:01:00.0/config", 0x78, []byte{0x30, 0x59}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dev, "config"))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(cfg)
	want[0x78], want[0x79] = 0x30, 0x59
	if !slices.Equal(got, want) {
		t.Errorf("config changed beyond the register (len %d)", len(got))
	}
	if err := fs.WriteAt("sys/bus/pci/devices/0000:01:00.0/nonexistent", 0, []byte{1}); !IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
	if err := fs.WriteAt("sys/escape", 0, []byte("x")); err == nil {
		if b, _ := os.ReadFile(outside); string(b) != "keep" {
			t.Fatal("WriteAt followed a link out of the tree")
		}
	}
	if err := fs.WriteAt("", 0, []byte{1}); !errors.Is(err, ErrIsRoot) {
		t.Errorf("the root: %v", err)
	}
	if err := fs.WriteAt("sys/bus/pci/devices/0000:01:00.0/config", -1, []byte{1}); err == nil {
		t.Error("a negative offset was accepted")
	}
}
