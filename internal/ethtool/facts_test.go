package ethtool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/sff"
)

// writeTree writes facts as a host tree's files and returns the root.
func writeTree(t *testing.T, iface string, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		p := filepath.Join(root, Dir(iface), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestFilesRoundTrip: what Files writes, Load reads back to the same files,
// so a snapshot replays what was read live.
func TestFilesRoundTrip(t *testing.T) {
	k := &fakeKernel{t: t, pages: testModule(), pageErr: map[sff.Page]int{sff.Upper(3, 0): 5}}
	c := k.dial()
	f := Collect(c, "eth9")
	c.Close()
	files, err := f.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{FileLinkModes, FileLinkState, FileFEC, FileStats, FileChannels, FileRings, FileNotRead,
		"module-eeprom/50-00-0-0.bin", "module-eeprom/50-00-0-128.bin"} {
		if _, ok := files[want]; !ok {
			t.Errorf("no %s among %d files", want, len(files))
		}
	}
	fs, err := hostfs.New(writeTree(t, "eth9", files))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	back, err := Load(fs, "eth9")
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(files) {
		t.Errorf("%d files after the round trip, %d before", len(again), len(files))
	}
	for name, b := range files {
		if !bytes.Equal(again[name], b) {
			t.Errorf("%s differs after the round trip:\n%s\n---\n%s", name, b, again[name])
		}
	}
	if none, err := Load(fs, "eth0"); none != nil || err != nil {
		t.Errorf("an interface without facts: %v, %v", none, err)
	}
}

func TestLoadBad(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"garbage json", map[string][]byte{FileFEC: []byte("{")}, "fec.json"},
		{"wrong type", map[string][]byte{FileChannels: []byte(`{"rx": "four"}`)}, "ethtool-channels.schema.json"},
		{"page too long", map[string][]byte{"module-eeprom/50-00-0-0.bin": make([]byte, 200)}, "more than one 128-byte read"},
		{"bad page name", map[string][]byte{"module-eeprom/50-0-0-0.bin": {1}}, "50-0-0-0"},
		{"stray file", map[string][]byte{"module-eeprom/notes.txt": {1}}, "not a module page"},
		{"empty error", map[string][]byte{"module-eeprom/error": []byte("\n")}, "empty"},
	}
	for _, tt := range tests {
		fs, err := hostfs.New(writeTree(t, "eth0", tt.files))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Load(fs, "eth0")
		fs.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "/linerate/ethtool/eth0/") {
			t.Errorf("%s: %v, want an error naming the file and %q", tt.name, err, tt.want)
		}
	}
}

func TestSplitFlat(t *testing.T) {
	sfp := make([]byte, 512)
	sfp[0] = 0x03
	p := splitFlat(sfp)
	if len(p) != 4 || p[sff.Page{I2C: sff.AddrA2}] == nil || p[sff.Page{I2C: sff.AddrA2, Offset: 128}] == nil {
		t.Errorf("SFP dump: %v", keys(p))
	}
	q := make([]byte, 640)
	q[0] = 0x11
	p = splitFlat(q)
	if len(p) != 5 || p[sff.Upper(3, 0)] == nil || p[sff.Upper(0, 0)] == nil {
		t.Errorf("QSFP dump: %v", keys(p))
	}
}

func keys(p sff.Pages) []string {
	var out []string
	for k := range p {
		out = append(out, k.Name())
	}
	return out
}
