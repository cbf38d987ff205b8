package snapshot

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/testutil"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/{FuzzOpen,FuzzExtractTar} from the seed archives")

// fuzzLimits are small, so that the fuzzer reaches the bounds and every
// input is quick to read.
func fuzzLimits() limits {
	return limits{entries: 64, file: 64 << 10, total: 256 << 10, archive: 1 << 20}
}

type seed struct {
	name string
	data []byte // gzip'd tar
}

// seeds are valid and hostile snapshots, one of each kind Open refuses.
func seeds() []seed {
	var written bytes.Buffer
	entries := []hostfs.Entry{
		{Path: "sys/class/net", Dir: true},
		{Path: "sys/class/net/eth0", Link: "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0"},
		{Path: "sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/mtu", Data: []byte("1500\n")},
		{Path: "sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/speed"},
		{Path: "sys/devices/pci0000:00/0000:00:03.0/driver", Link: "../../../bus/pci/drivers/virtio-pci"},
		{Path: "proc/self", Link: "4242"},
		{Path: "proc/4242/net/dev", Data: []byte("Inter-|\n")},
	}
	if err := Write(&written, entries, testMeta()); err != nil {
		panic(fmt.Sprintf("building fuzz seed: %v", err))
	}
	many := []ent{}
	for i := range 70 {
		many = append(many, file(fmt.Sprintf("proc/%d", i), ""))
	}
	valid := snap(file("proc/x", "1\n"))
	return []seed{
		{"valid-written", written.Bytes()},
		{"valid-hand", valid},
		{"valid-links", snap(link("proc/net", "self/net"), link("proc/self", "42"), file("proc/42/net/dev", "x"))},
		{"absolute", snap(file("/tmp/evil", "x"))},
		{"dotdot", snap(file("../../evil", "x"))},
		{"unclean", snap(file("proc//x", "x"))},
		{"link-escape", snap(link("sys/class/x", "../../../evil"))},
		{"link-absolute", snap(link("sys/x", "/etc"))},
		{"through-link", snap(link("sys/l", "../proc"), file("sys/l/evil", "x"))},
		{"link-over-dir", snap(file("sys/d/f", "x"), link("sys/d", "../proc"))},
		{"hardlink", snap(ent{name: "proc/b", typ: '1', link: "/etc/shadow"})},
		{"chardev", snap(ent{name: "proc/null", typ: '3'})},
		{"fifo", snap(ent{name: "proc/fifo", typ: '6'})},
		{"duplicate", snap(file("proc/a", "1"), file("proc/a", "2"))},
		{"oversized", snap(file("proc/big", strings.Repeat("x", 64<<10+1)))},
		{"too-many", snap(many...)},
		{"deep-name", snap(dir(deep(32 << 10)))},
		{"implied-dirs", snap(file(deep(40)+"/f", "1"))},
		{"long-target", snap(link("sys/l", strings.Repeat("x", MaxNameLen+1)))},
		{"missing-meta", tarball(dir("proc"), file("proc/x", "1"))},
		{"unknown-format", tarball(file(MetaPath, `{"format":2}`), dir("proc"))},
		{"truncated", valid[:len(valid)/2]},
		{"not-gzip", []byte("hello, I am a text file\n")},
		{"empty", nil},
	}
}

// gunzip returns the tar inside a seed, or nil if it has none or it is
// large (the bound seeds): FuzzOpen covers those, and large inputs only
// slow the fuzzer down.
func gunzip(b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	out, err := io.ReadAll(zr)
	if err != nil || len(out) > 16<<10 {
		return nil
	}
	return out
}

// FuzzOpen opens arbitrary bytes as a snapshot: it must never panic, and
// never leave or write anything outside its temporary directory.
func FuzzOpen(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		openInBudget(t, data)
	})
}

// openInBudget opens data as a snapshot (openBytes) within a work budget:
// the importer's thread may spend at most 2 s of CPU on one input of the
// fuzzer's size, whatever it holds (a name of 32 K components once took
// 2.3 s in 216 bytes).
func openInBudget(t *testing.T, data []byte) {
	t.Helper()
	if cpu := testutil.ThreadCPU(func() { openBytes(t, data, fuzzLimits()) }); cpu > 2*time.Second {
		t.Fatalf("opening %d bytes took %v of CPU", len(data), cpu)
	}
}

// FuzzExtractTar is FuzzOpen behind a valid gzip layer, so that mutations
// reach the tar headers instead of breaking the compressed stream.
func FuzzExtractTar(f *testing.F) {
	for _, s := range seeds() {
		if tb := gunzip(s.data); tb != nil {
			f.Add(tb)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(data)
		zw.Close()
		openInBudget(t, buf.Bytes())
	})
}

// TestFuzzCorpus writes the committed seed corpus with -update-corpus.
// The corpus is what `go test` replays, so these inputs run in every
// test run, not only when fuzzing.
func TestFuzzCorpus(t *testing.T) {
	if !*updateCorpus {
		// CI: only rewrites the seed corpus when asked; go test replays it.
		t.Skip("run with -update-corpus to rewrite the seed corpus")
	}
	for _, target := range []string{"FuzzOpen", "FuzzExtractTar"} {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds() {
			data := s.data
			if target == "FuzzExtractTar" {
				if data = gunzip(s.data); data == nil {
					continue
				}
			}
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
