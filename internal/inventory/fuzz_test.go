package inventory

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/snapshot"
	"github.com/linerate/linerate/internal/testutil"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzCollectSnapshot from the seed archives")

// vmSnapshot is a real snapshot (a virtio VM), 264 entries.
const vmSnapshot = "../../testdata/snapshots/vm-virtio.tar.gz"

// fanOut rewrites a snapshot so that every IRQ affinity list is a link to
// one 1 MiB CPU list ("0-8191,0-8191,…") at the archive's top: a few
// kilobytes that used to cost seconds of parsing per link.
func fanOut(t testing.TB, archive []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	big := strings.TrimSuffix(strings.Repeat("0-8191,", (1<<20)/7), ",")
	links := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name == snapshot.MetaPath {
			tw.WriteHeader(h)
			tw.Write(body)
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.list", Mode: 0o644, Size: int64(len(big)), ModTime: h.ModTime})
			tw.Write([]byte(big))
			continue
		}
		if strings.HasPrefix(h.Name, "proc/irq/") && strings.HasSuffix(h.Name, "affinity_list") {
			h = &tar.Header{Typeflag: tar.TypeSymlink, Name: h.Name, Linkname: "../../big.list", ModTime: h.ModTime}
			body = nil
			links++
		}
		tw.WriteHeader(h)
		tw.Write(body)
	}
	tw.Close()
	zw.Close()
	if links == 0 {
		t.Fatal("no affinity list to redirect")
	}
	return out.Bytes()
}

// collectSnapshot opens data as a snapshot and collects its inventory, as
// doctor --root ARCHIVE does; a refusal is fine, a panic or a hang is not.
func collectSnapshot(t *testing.T, data []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.tar.gz")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, cleanup, err := snapshot.Open(p)
	if err != nil {
		return
	}
	defer cleanup()
	Collect(fs, Options{})
}

// FuzzCollectSnapshot reads arbitrary archives as doctor --root does: the
// importer, then the inventory over the extracted tree. Beyond crashes it
// holds each input to a work budget in process CPU time (not the wall
// clock, which a busy host stretches): the archive whose affinity lists
// all link to one 1 MiB list took 27 s, a real snapshot some 0.1 s.
func FuzzCollectSnapshot(f *testing.F) {
	vm, err := os.ReadFile(vmSnapshot)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(vm)
	f.Fuzz(func(t *testing.T, data []byte) {
		if cpu := testutil.ProcessCPU(func() { collectSnapshot(t, data) }); cpu > 5*time.Second {
			t.Fatalf("reading a %d-byte archive took %v of CPU", len(data), cpu)
		}
	})
}

// TestFanOutCollect: the fan-out archive is read in at most ten times the
// CPU of the archive it was made from, and every IRQ still has its
// affinity.
func TestFanOutCollect(t *testing.T) {
	vm, err := os.ReadFile(vmSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	fan := fanOut(t, vm)
	var plain, linked time.Duration
	for range 3 {
		plain += testutil.ProcessCPU(func() { collectSnapshot(t, vm) })
		linked += testutil.ProcessCPU(func() { collectSnapshot(t, fan) })
	}
	t.Logf("open and collect, CPU time over 3 runs: %v the real snapshot, %v with its affinity lists linked to one 1 MiB list", plain, linked)
	if linked > 10*plain {
		t.Errorf("the fan-out archive cost %.1fx the CPU of the real one", float64(linked)/float64(plain))
	}
}

// TestFuzzCorpus writes the committed seed corpus with -update-corpus;
// go test replays it in every run.
func TestFuzzCorpus(t *testing.T) {
	if !*updateCorpus {
		// CI: only rewrites the seed corpus when asked; go test replays it.
		t.Skip("run with -update-corpus to rewrite the seed corpus")
	}
	vm, err := os.ReadFile(vmSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzCollectSnapshot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(fanOut(t, vm))) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, "fan-out"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
