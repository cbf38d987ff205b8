package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/snapshot"
	"github.com/linerate/linerate/internal/testutil"
)

// fanOutArchive writes the captured tree at src as a snapshot, with a
// 1 MiB CPU list big.list ("0-8191,0-8191,…") at its top. With links,
// every affinity list of the NICs' IRQs is a symbolic link to big.list:
// each link passes the importer's checks and costs no bytes, and doctor
// used to parse the big list once per link (7 s each).
func fanOutArchive(t *testing.T, src, out string, links bool) {
	t.Helper()
	msi := map[string]bool{}
	filepath.WalkDir(filepath.Join(src, "sys"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "msi_irqs" {
			ents, _ := os.ReadDir(p)
			for _, e := range ents {
				msi[e.Name()] = true
			}
		}
		return nil
	})
	if len(msi) == 0 {
		t.Fatalf("%s has no NIC IRQs", src)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	add := func(h *tar.Header, data []byte) {
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if data != nil {
			tw.Write(data)
		}
	}
	meta, _ := json.Marshal(map[string]int{"format": snapshot.FormatVersion})
	add(&tar.Header{Typeflag: tar.TypeDir, Name: "linerate/", Mode: 0o755}, nil)
	add(&tar.Header{Typeflag: tar.TypeReg, Name: snapshot.MetaPath, Mode: 0o644}, meta)
	big := strings.TrimSuffix(strings.Repeat("0-8191,", (1<<20)/7), ",")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "big.list", Mode: 0o644}, []byte(big))
	redirected := 0
	for _, top := range []string{"proc", "sys"} {
		filepath.WalkDir(filepath.Join(src, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(src, p)
			parts := strings.Split(rel, "/")
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				add(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: target}, nil)
			case d.IsDir():
				add(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755}, nil)
			case links && len(parts) == 4 && parts[1] == "irq" && msi[parts[2]] &&
				(parts[3] == "smp_affinity_list" || parts[3] == "effective_affinity_list"):
				add(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: "../../big.list"}, nil)
				redirected++
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				add(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644}, b)
			}
			return nil
		})
	}
	if links && redirected == 0 {
		t.Fatal("no affinity list redirected")
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorFanOutSnapshot: the snapshot whose NIC IRQ affinity lists all
// link to one 1 MiB CPU list is diagnosed in at most ten times the time
// of the same archive without the links (it took 27.6 s against 88 ms).
// Both are timed at the same moment, interleaved, the best of three each.
func TestDoctorFanOutSnapshot(t *testing.T) {
	dir := t.TempDir()
	plain, fan := filepath.Join(dir, "plain.tar.gz"), filepath.Join(dir, "fan.tar.gz")
	fanOutArchive(t, hostTree("ryzen-9900x-cx5-x4"), plain, false)
	fanOutArchive(t, hostTree("ryzen-9900x-cx5-x4"), fan, true)
	best := map[string]time.Duration{}
	for range 3 {
		for _, a := range []string{plain, fan} {
			t0 := time.Now()
			_, stderr, code := runCLI(t, "doctor", "--root", a, "--json")
			el := time.Since(t0)
			if code > 1 {
				t.Fatalf("doctor --root %s: exit %d: %s", filepath.Base(a), code, stderr)
			}
			if b, ok := best[a]; !ok || el < b {
				best[a] = el
			}
		}
	}
	ratio := float64(best[fan]) / float64(best[plain])
	t.Logf("doctor --root: %v without links, %v with the affinity lists linked to one 1 MiB list (%.2fx)", best[plain], best[fan], ratio)
	if ratio > 10 {
		t.Errorf("the fan-out snapshot took %.1fx the time of the same archive without links (%v against %v), over 10x", ratio, best[fan], best[plain])
	}
}

// TestDoctorFIFOInTree: a captured tree with a FIFO where
// proc/sys/kernel/hostname should be ends doctor --root at once (it hung
// forever on the open), saying the file was not read.
func TestDoctorFIFOInTree(t *testing.T) {
	root := testutil.CopyTree(t, hostTree("ryzen-9900x-cx5-x4"))
	host := filepath.Join(root, "proc/sys/kernel/hostname")
	os.Remove(host)
	if err := syscall.Mkfifo(host, 0o644); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		stdout, stderr string
		code           int
	}
	done := make(chan outcome, 1)
	t0 := time.Now()
	go func() {
		o, e, c := runCLI(t, "doctor", "--root", root, "--json")
		done <- outcome{o, e, c}
	}()
	select {
	case o := <-done:
		t.Logf("doctor --root with a FIFO for the hostname: exit %d after %v", o.code, time.Since(t0).Round(time.Millisecond))
		if o.code > 1 || !json.Valid([]byte(o.stdout)) {
			t.Errorf("exit %d: %s", o.code, o.stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("doctor --root on a tree with a FIFO still runs after 10 s")
	}
}
