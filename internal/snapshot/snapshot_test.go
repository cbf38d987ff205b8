package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

const (
	dev  = "sys/devices/pci0000:00/0000:00:03.0"
	eth0 = dev + "/virtio2/net/eth0"
)

// sysTree builds a small host tree with the shapes doctor meets: sysfs
// attributes, relative sysfs links (class → devices, device, driver),
// procfs's self link, and an empty attribute.
func sysTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p, data string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(p, target string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	mk(dev+"/vendor", "0x1af4\n")
	mk(dev+"/device", "0x1000\n")
	mk(dev+"/numa_node", "-1\n")
	mk(dev+"/current_link_speed", "")
	mk(eth0+"/mtu", "1500\n")
	mk(eth0+"/operstate", "up\n")
	mk(eth0+"/queues/rx-0/rps_cpus", "0\n")
	mk(eth0+"/queues/tx-0/xps_cpus", "3\n")
	mk("sys/bus/pci/drivers/virtio-pci/bind", "")
	mk("sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list", "0-1\n")
	mk("proc/interrupts", "           CPU0       CPU1\n 24:        5       7   PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n")
	mk("proc/sys/net/core/rmem_max", "212992\n")
	mk("proc/4242/net/dev", "Inter-|   Receive\n")
	ln("sys/class/net/eth0", "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0")
	ln("sys/class/net/lo", "../../devices/virtual/net/lo")
	ln(eth0+"/device", "../../../virtio2")
	ln(dev+"/driver", "../../../bus/pci/drivers/virtio-pci")
	ln("proc/self", "4242")
	ln("proc/net", "self/net")
	return root
}

// observe does what doctor does to an FS and returns what it saw, error
// texts left out (they name the root, which differs).
func observe(t *testing.T, fs *hostfs.FS) map[string]string {
	t.Helper()
	got := map[string]string{}
	put := func(key string, v any, err error) {
		if err != nil {
			got[key] = "error"
			return
		}
		got[key] = fmt.Sprint(v)
	}
	for _, p := range []string{"sys/class/net/eth0/mtu", "sys/class/net/eth0/operstate",
		"sys/class/net/eth0/device/../../vendor", dev + "/current_link_speed", "proc/net/dev"} {
		v, err := fs.ReadString(p)
		put("read "+p, v, err)
	}
	v, err := fs.ReadInt("proc/sys/net/core/rmem_max")
	put("int rmem_max", v, err)
	cpus, err := fs.ReadCPUList("sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list")
	put("cpulist", cpus, err)
	for _, p := range []string{"sys/class/net", "sys/class/net/eth0/queues", dev} {
		names, err := fs.ReadDir(p)
		put("dir "+p, names, err)
	}
	for _, p := range []string{"sys/class/net/eth0", "sys/class/net/eth0/device", "proc/net/dev"} {
		r, err := fs.Resolve(p)
		put("resolve "+p, r, err)
	}
	l, err := fs.Readlink(dev + "/driver")
	put("readlink driver", l, err)
	put("exists lo", fs.Exists("sys/class/net/lo"), nil)
	if r, err := fs.Open("proc/interrupts", 1<<20); err != nil {
		put("stream interrupts", nil, err)
	} else {
		b, err := io.ReadAll(r)
		r.Close()
		put("stream interrupts", string(b), err)
	}
	return got
}

func testMeta() Meta {
	return Meta{
		Created:  time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Hostname: "lab-a",
		Version:  "0.1.0",
		Command:  []string{"linerate", "snapshot", "-o", "x.tar.gz"},
		Kernel:   "6.1.0-18-amd64",
	}
}

// record reads a host tree as doctor would and returns what was recorded.
func record(t *testing.T) (map[string]string, []hostfs.Entry) {
	t.Helper()
	fs, err := hostfs.New(sysTree(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rec := fs.Record()
	seen := observe(t, fs)
	rec.Add("linerate/ethtool/eth0.json", []byte(`{"driver":"virtio_net"}`))
	return seen, rec.Entries()
}

// tmpdir points os.TempDir at a fresh directory and returns it, so that a
// test sees everything Open leaves behind.
func tmpdir(t *testing.T) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	return tmp
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("%s holds %d leftovers, first %s", dir, len(ents), ents[0].Name())
	}
}

func TestRoundTrip(t *testing.T) {
	tmp := tmpdir(t)
	seen, entries := record(t)
	if len(entries) == 0 {
		t.Fatal("nothing recorded")
	}
	out := filepath.Join(t.TempDir(), "host.tar.gz")
	if err := WriteFile(out, entries, testMeta()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("WriteFile left %d files, want just the snapshot", len(ents))
	}

	m, err := ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	want := testMeta()
	want.Format = FormatVersion
	if !m.Created.Equal(want.Created) || m.Hostname != want.Hostname || m.Version != want.Version ||
		!slices.Equal(m.Command, want.Command) || m.Kernel != want.Kernel || m.Format != 1 {
		t.Errorf("ReadMeta = %+v, want %+v", m, want)
	}

	fs, cleanup, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	replay := observe(t, fs)
	for k, v := range seen {
		if replay[k] != v {
			t.Errorf("%s: replay %q, live %q", k, replay[k], v)
		}
	}
	// Every recorded entry reads back as recorded.
	for _, e := range entries {
		switch {
		case e.Link != "":
			got, err := fs.Readlink(e.Path)
			if err != nil || got != e.Link {
				t.Errorf("link %s -> %q (%v), want %q", e.Path, got, err, e.Link)
			}
		case e.Dir:
			if !fs.Exists(e.Path) {
				t.Errorf("directory %s missing", e.Path)
			}
		default:
			got, err := fs.ReadFile(e.Path)
			if err != nil || !bytes.Equal(got, e.Data) {
				t.Errorf("file %s = %q (%v), want %q", e.Path, got, err, e.Data)
			}
		}
	}
	if b, err := fs.ReadFile(MetaPath); err != nil || !json.Valid(b) {
		t.Errorf("metadata in the tree: %q, %v", b, err)
	}
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, tmp)
}

func TestWriteDeterministic(t *testing.T) {
	_, entries := record(t)
	var a, b bytes.Buffer
	if err := Write(&a, entries, testMeta()); err != nil {
		t.Fatal(err)
	}
	shuffled := slices.Clone(entries)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if err := Write(&b, shuffled, testMeta()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same entries in another order give another archive")
	}

	zr, err := gzip.NewReader(&a)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		names = append(names, name)
		if !h.ModTime.Equal(testMeta().Created) || h.Uname != "" || h.Gname != "" || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v owner %q/%q %d/%d", h.Name, h.ModTime, h.Uname, h.Gname, h.Uid, h.Gid)
		}
		wantMode := map[byte]int64{tar.TypeDir: 0o755, tar.TypeReg: 0o644, tar.TypeSymlink: 0o777}[h.Typeflag]
		if h.Mode != wantMode {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, wantMode)
		}
		if h.Typeflag == tar.TypeDir && !strings.HasSuffix(h.Name, "/") {
			t.Errorf("directory %s without trailing slash", h.Name)
		}
		if dir := filepath.Dir(name); dir != "." && !seen[dir] {
			t.Errorf("%s comes before its parent", name)
		}
		seen[name] = true
	}
	if len(names) < 2 || names[0] != "linerate" || names[1] != MetaPath {
		t.Errorf("archive starts %q, want the metadata first", names[:min(2, len(names))])
	}
}

func TestWriteRefuses(t *testing.T) {
	small := limits{entries: 20, file: 100, total: 150, archive: 1 << 20}
	for _, tc := range []struct {
		name    string
		entries []hostfs.Entry
		l       limits
		want    string
	}{
		{"absolute path", []hostfs.Entry{{Path: "/sys/x"}}, defaultLimits(), "absolute path"},
		{"dotdot", []hostfs.Entry{{Path: "sys/../../x"}}, defaultLimits(), "leaves the archive root"},
		{"absolute target", []hostfs.Entry{{Path: "sys/l", Link: "/sys/devices"}}, defaultLimits(), "absolute target"},
		{"escaping target", []hostfs.Entry{{Path: "sys/l", Link: "../../x"}}, defaultLimits(), "leaves the archive root"},
		{"file below link", []hostfs.Entry{{Path: "sys/l", Link: "../proc"}, {Path: "sys/l/x"}}, defaultLimits(), "goes through the symbolic link"},
		{"metadata taken", []hostfs.Entry{{Path: MetaPath, Data: []byte("{}")}}, defaultLimits(), "appears twice"},
		{"both kinds", []hostfs.Entry{{Path: "sys/x", Dir: true, Link: "y"}}, defaultLimits(), "both"},
		{"file too large", []hostfs.Entry{{Path: "sys/x", Data: make([]byte, 101)}}, small, "over the limit"},
		{"total too large", []hostfs.Entry{{Path: "sys/x", Data: make([]byte, 100)}, {Path: "sys/y", Data: make([]byte, 100)}}, small, "total more than"},
		{"too many entries", func() (es []hostfs.Entry) {
			for i := range 30 {
				es = append(es, hostfs.Entry{Path: fmt.Sprintf("sys/f%d", i)})
			}
			return es
		}(), small, "over the limit of 20"},
		{"archive too large", []hostfs.Entry{{Path: "sys/x", Data: random(4096)}}, limits{entries: 20, file: 1 << 20, total: 1 << 20, archive: 1024}, "compressed archive over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := write(io.Discard, tc.entries, testMeta(), tc.l)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// WriteFile leaves nothing behind when Write fails.
	out := t.TempDir()
	if err := WriteFile(filepath.Join(out, "x.tar.gz"), []hostfs.Entry{{Path: "/x"}}, testMeta()); err == nil {
		t.Error("WriteFile accepted an absolute path")
	}
	assertEmpty(t, out)
}

func random(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(b)
	return b
}

// ent is one entry of a hand-built archive.
type ent struct {
	name string
	typ  byte
	body string
	link string
}

func file(name, body string) ent { return ent{name: name, typ: tar.TypeReg, body: body} }
func dir(name string) ent        { return ent{name: name, typ: tar.TypeDir} }
func link(name, target string) ent {
	return ent{name: name, typ: tar.TypeSymlink, link: target}
}

// metaJSON is valid metadata in the current format.
const metaJSON = `{"format":1,"created":"2025-03-01T12:00:00Z","hostname":"h","linerate_version":"0.1.0","command":["linerate","snapshot"],"kernel":"6.1.0"}`

// snap builds a snapshot by hand: valid metadata and a proc/ directory,
// then the given entries, which a test makes hostile.
func snap(es ...ent) []byte {
	return tarball(append([]ent{dir("linerate"), file(MetaPath, metaJSON), dir("proc")}, es...)...)
}

// tarball builds a gzip'd tar of exactly the given entries.
func tarball(es ...ent) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body)),
			Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(fmt.Sprintf("building test archive: %v", err))
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// openBytes writes data to a file and opens it with limits l, checking
// that nothing is left behind or written outside the temporary directory
// whatever the outcome.
func openBytes(t *testing.T, data []byte, l limits) error {
	t.Helper()
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	p := filepath.Join(base, "a.tar.gz")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fs, cleanup, err := open(p, l)
	if err == nil {
		checkInside(t, fs.Root())
		if cerr := cleanup(); cerr != nil {
			t.Errorf("cleanup: %v", cerr)
		}
	} else if strings.ContainsAny(err.Error(), "\n\r") {
		t.Errorf("error is not one line: %q", err)
	}
	assertEmpty(t, tmp)
	ents, rerr := os.ReadDir(base)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %q: something was written outside the temporary directory", base, names)
	}
	return err
}

// checkInside fails if any link in the tree at root resolves outside it.
func checkInside(t *testing.T, root string) {
	t.Helper()
	inside := func(p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) || !inside(filepath.Join(filepath.Dir(p), target)) {
			t.Errorf("link %s -> %s leaves the root", p, target)
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && !inside(r) {
			t.Errorf("link %s resolves to %s, outside the root", p, r)
		}
		return nil
	})
}

func TestOpenRefuses(t *testing.T) {
	small := limits{entries: 10, file: 1024, total: 4096, archive: 1 << 20}
	valid := snap(file("proc/x", "1\n"))
	many := []ent{}
	for i := range 20 {
		many = append(many, file(fmt.Sprintf("proc/f%d", i), ""))
	}
	big := []ent{}
	for i := range 5 {
		big = append(big, file(fmt.Sprintf("proc/f%d", i), strings.Repeat("x", 1000)))
	}
	bomb := func() []byte {
		// A valid archive followed, inside the gzip stream, by megabytes
		// of zeros after the tar end marker.
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zr, _ := gzip.NewReader(bytes.NewReader(valid))
		io.Copy(zw, zr)
		zw.Write(make([]byte, 4<<20))
		zw.Close()
		return buf.Bytes()
	}()
	for _, tc := range []struct {
		name string
		data []byte
		l    limits
		is   error
		want string
	}{
		{"absolute path", snap(file("/tmp/evil", "x")), small, ErrUnsafe, "entry /tmp/evil is an absolute path"},
		{"dotdot", snap(file("../../evil", "x")), small, ErrUnsafe, "entry ../../evil leaves the archive root"},
		{"dotdot inside", snap(file("proc/../../evil", "x")), small, ErrUnsafe, "leaves the archive root"},
		{"dotdot dir", snap(dir("../evil/")), small, ErrUnsafe, "leaves the archive root"},
		{"unclean", snap(file("proc//x", "x")), small, ErrUnsafe, "is not a clean path"},
		{"dot prefix", snap(file("./proc/x", "x")), small, ErrUnsafe, "is not a clean path"},
		{"dot", snap(dir("./")), small, ErrUnsafe, "is not a clean path"},
		{"link escapes", snap(link("sys/class/x", "../../../evil")), small, ErrUnsafe, "link sys/class/x -> ../../../evil leaves the archive root"},
		{"link escapes deep", snap(link("sys/class/net/x", "../../../../../../../../etc")), small, ErrUnsafe, "leaves the archive root"},
		{"link absolute", snap(link("sys/x", "/etc")), small, ErrUnsafe, "absolute target"},
		{"link unclean", snap(link("sys/class/x", "a/../../../..")), small, ErrUnsafe, "not a clean relative target"},
		{"link empty", snap(link("sys/x", "")), small, ErrUnsafe, "empty target"},
		{"through link", snap(link("sys/l", "../proc"), file("sys/l/evil", "x")), small, ErrUnsafe, "goes through the symbolic link sys/l"},
		{"through escaping link", snap(link("l", "/tmp"), file("l/evil", "x")), small, ErrUnsafe, "absolute target"},
		{"link over dir", snap(file("sys/d/f", "x"), link("sys/d", "../proc")), small, ErrUnsafe, "is a symbolic link but other entries lie below it"},
		{"below file", snap(file("sys/f", "x"), file("sys/f/g", "x")), small, ErrUnsafe, "lies below the file"},
		{"hard link", snap(file("proc/a", "x"), ent{name: "proc/b", typ: tar.TypeLink, link: "proc/a"}), small, ErrUnsafe, "hard link"},
		{"hard link out", snap(ent{name: "proc/b", typ: tar.TypeLink, link: "/etc/shadow"}), small, ErrUnsafe, "hard link"},
		{"char device", snap(ent{name: "proc/null", typ: tar.TypeChar}), small, ErrUnsafe, "character device"},
		{"block device", snap(ent{name: "proc/sda", typ: tar.TypeBlock}), small, ErrUnsafe, "block device"},
		{"fifo", snap(ent{name: "proc/fifo", typ: tar.TypeFifo}), small, ErrUnsafe, "FIFO"},
		{"contiguous file", snap(ent{name: "proc/s", typ: tar.TypeCont}), small, ErrUnsafe, "unsupported type '7'"},
		{"unknown type", snap(ent{name: "proc/s", typ: 'Z'}), small, ErrUnsafe, "unsupported type 'Z'"},
		{"duplicate file", snap(file("proc/a", "1"), file("proc/a", "2")), small, ErrUnsafe, "entry proc/a appears twice"},
		{"duplicate dir", snap(dir("proc/")), small, ErrUnsafe, "appears twice"},
		{"duplicate link", snap(link("sys/a", "b"), link("sys/a", "c")), small, ErrUnsafe, "appears twice"},
		{"duplicate metadata", snap(file(MetaPath, metaJSON)), small, ErrUnsafe, "appears twice"},
		{"newline in name", snap(file("../x\nsnapshot ok", "x")), small, ErrUnsafe, `"../x\nsnapshot ok"`},
		{"oversized file", snap(file("proc/big", strings.Repeat("x", 1025))), small, ErrUnsafe, "entry proc/big is 1025 bytes, over the limit of 1024 bytes per file"},
		{"total too large", snap(big...), small, ErrUnsafe, "files total more than 4096 bytes"},
		{"too many entries", snap(many...), small, ErrUnsafe, "more than 10 entries"},
		{"archive too large", valid, limits{entries: 10, file: 1024, total: 4096, archive: 100}, ErrUnsafe, "over the limit of 100 bytes compressed"},
		{"gzip bomb", bomb, small, ErrUnsafe, "unpacks to more than"},
		{"truncated gzip", valid[:len(valid)/2], small, ErrNotSnapshot, "is truncated or damaged (truncated: unexpected end of file): copy it again whole"},
		{"truncated trailer", valid[:len(valid)-4], small, ErrNotSnapshot, "truncated"},
		{"corrupt checksum", append(slices.Clone(valid[:len(valid)-8]), 0, 0, 0, 0, 0, 0, 0, 0), small, ErrNotSnapshot, "checksum"},
		{"not gzip", []byte("hello, I am a text file\n"), small, ErrNotSnapshot, "is not a linerate snapshot (not gzip data)"},
		{"empty file", nil, small, ErrNotSnapshot, "is not a linerate snapshot"},
		{"gzip not tar", gz(strings.Repeat("not a tar header ", 64)), small, ErrNotSnapshot, "is not a linerate snapshot"},
		{"empty tar", tarball(), small, ErrNotSnapshot, "no linerate/snapshot.json"},
		{"missing metadata", tarball(dir("proc"), file("proc/x", "1")), small, ErrNotSnapshot, "no linerate/snapshot.json"},
		{"metadata is a directory", tarball(dir("proc"), dir(MetaPath)), small, ErrNotSnapshot, "no linerate/snapshot.json"},
		{"metadata unparseable", tarball(file(MetaPath, "{"), dir("proc")), small, ErrNotSnapshot, "linerate/snapshot.json"},
		{"neither sys nor proc", tarball(file(MetaPath, metaJSON), file("etc/x", "1")), small, ErrNotSnapshot, "neither sys/ nor proc/"},
		{"unknown format", tarball(file(MetaPath, `{"format":2,"linerate_version":"9.0"}`), dir("proc")), small, nil, "format version 2 is not supported"},
		{"no format", tarball(file(MetaPath, `{}`), dir("proc")), small, nil, "format version 0 is not supported (this linerate reads version 1): read it with the linerate that wrote it (which one, it does not say)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openBytes(t, tc.data, tc.l)
			if err == nil {
				t.Fatal("Open accepted it")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want one matching %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
			if errors.Is(err, ErrUnsafe) && !strings.Contains(err.Error(), "refusing to extract") {
				t.Errorf("err = %v, want it to say what it refused", err)
			}
		})
	}
}

func gz(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, s)
	zw.Close()
	return buf.Bytes()
}

// TestOpenAccepts checks the shapes a snapshot may legitimately take.
func TestOpenAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"plain", snap(file("proc/x", "1\n"))},
		{"implicit parents", snap(file("sys/a/b/c", "1"))},
		{"dir after its files", snap(file("sys/a/b", "1"), dir("sys/a/"))},
		{"sysfs link", snap(dir("sys/devices/x/"), link("sys/class/net/x", "../../devices/x"))},
		{"link to root", snap(link("sys/class/net/x", "../../.."))},
		{"link before its target", snap(link("proc/self", "4242"), file("proc/4242/stat", "1"))},
		{"chained links", snap(link("proc/net", "self/net"), link("proc/self", "42"), file("proc/42/net/dev", "x"))},
		{"dangling link", snap(link("sys/x", "nowhere"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := openBytes(t, tc.data, defaultLimits()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenOversizedDefault checks the exported bound itself.
func TestOpenOversizedDefault(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("writes a 64 MiB file through gzip")
	}
	data := snap(file("proc/big", strings.Repeat("\x00", MaxFileSize+1)))
	err := openBytes(t, data, defaultLimits())
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "over the limit of 67108864 bytes per file") {
		t.Errorf("err = %v", err)
	}
}

func TestReadMeta(t *testing.T) {
	tmp := t.TempDir()
	p := filepath.Join(tmp, "a.tar.gz")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"valid", snap(), ""},
		{"not gzip", []byte("plain text, longer than a gzip header\n"), "not gzip data"},
		{"missing", tarball(dir("proc")), "no linerate/snapshot.json"},
		{"unparseable", tarball(file(MetaPath, "[")), "linerate/snapshot.json"},
		{"unknown format", tarball(file(MetaPath, `{"format":3}`)), "format version 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMeta(p)
			if tc.want == "" {
				if err != nil || m.Hostname != "h" || m.Format != 1 {
					t.Errorf("ReadMeta = %+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadMeta(filepath.Join(tmp, "missing.tar.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadMeta(tmp); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

// BenchmarkOpen extracts a snapshot shaped like a large host's: 10,000
// small files in 1,000 directories, a link per directory. The time is
// mostly the file system's: on tmpfs it is a tenth of that on ext4.
func BenchmarkOpen(b *testing.B) {
	var entries []hostfs.Entry
	for d := range 1000 {
		dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/cache/index3", d)
		for f := range 10 {
			entries = append(entries, hostfs.Entry{Path: fmt.Sprintf("%s/attr%d", dir, f), Data: []byte("0-11\n")})
		}
		entries = append(entries, hostfs.Entry{Path: fmt.Sprintf("sys/bus/cpu/devices/cpu%d", d), Link: fmt.Sprintf("../../../devices/system/cpu/cpu%d", d)})
	}
	p := filepath.Join(b.TempDir(), "big.tar.gz")
	if err := WriteFile(p, entries, testMeta()); err != nil {
		b.Fatal(err)
	}
	b.Setenv("TMPDIR", b.TempDir())
	b.ResetTimer()
	for b.Loop() {
		_, cleanup, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := cleanup(); err != nil {
			b.Fatal(err)
		}
	}
}
