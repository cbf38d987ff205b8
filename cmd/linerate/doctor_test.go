package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/testbin"
)

// runCLI runs linerate in-process and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func hostTree(name string) string { return filepath.Join("..", "..", "testdata", "hosts", name) }

const vmSnapshot = "../../testdata/snapshots/vm-virtio.tar.gz"

func doctorSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../../docs/schema/doctor-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestDoctorJSONSchema validates doctor --json on every test host, the
// captured VM and this machine against docs/schema/doctor-v1.schema.json.
func TestDoctorJSONSchema(t *testing.T) {
	sch := doctorSchema(t)
	roots := []string{"", vmSnapshot}
	entries, err := os.ReadDir(filepath.Join("..", "..", "testdata", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, hostTree(e.Name()))
		}
	}
	// A virtual interface selected with --iface is listed with the NICs.
	roots = append(roots, "live --iface lo")
	for _, root := range roots {
		name := root
		if name == "" {
			name = "live"
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			args := []string{"doctor", "--json"}
			switch {
			case root == "live --iface lo":
				args = append(args, "--iface", "lo")
			case root != "":
				args = append(args, "--root", root)
			}
			out, stderr, code := runCLI(t, args...)
			if code == 2 {
				t.Fatalf("exit 2: %s", stderr)
			}
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Errorf("schema: %v", err)
			}
		})
	}
}

// TestDoctorSchemaPCIFields: a NIC of kind "pci" must carry its PCI
// address, driver, vendor and device IDs and its PCIe link; a virtual one
// (kind "veth") need not.
func TestDoctorSchemaPCIFields(t *testing.T) {
	sch := doctorSchema(t)
	out, stderr, code := runCLI(t, "doctor", "--json", "--root", hostTree("ryzen-9900x-cx5-x4"))
	if code == 2 {
		t.Fatalf("exit 2: %s", stderr)
	}
	doc := func(edit func(nic map[string]any)) any {
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		nic := v["nics"].([]any)[0].(map[string]any)
		if nic["kind"] != "pci" {
			t.Fatalf("first NIC is of kind %v, want pci", nic["kind"])
		}
		edit(nic)
		b, _ := json.Marshal(v)
		d, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := sch.Validate(doc(func(map[string]any) {})); err != nil {
		t.Fatalf("unedited document: %v", err)
	}
	pciFields := []string{"pci", "driver", "vendor_id", "device_id", "pcie"}
	for _, field := range pciFields {
		if err := sch.Validate(doc(func(nic map[string]any) { delete(nic, field) })); err == nil {
			t.Errorf("a pci NIC without %s validates", field)
		}
	}
	if err := sch.Validate(doc(func(nic map[string]any) { delete(nic, "kind") })); err == nil {
		t.Error("a NIC without kind validates")
	}
	veth := func(nic map[string]any) {
		nic["kind"] = "veth"
		for _, field := range pciFields {
			delete(nic, field)
		}
	}
	if err := sch.Validate(doc(veth)); err != nil {
		t.Errorf("a veth without PCI fields: %v", err)
	}
}

// embeddedDoctor returns linerate/doctor.json from a snapshot: what doctor
// said on the captured host at capture time.
func embeddedDoctor(t *testing.T, archive string) []byte {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no linerate/doctor.json in %s: %v", archive, err)
		}
		if h.Name == snapshotDoctorPath {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

// TestSnapshotReplay: doctor --root FILE.tar.gz gives the same JSON as
// doctor gave live on the captured host — for the committed capture of the
// development VM and for a snapshot of this machine taken now.
func TestSnapshotReplay(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "now.tar.gz")
	if _, stderr, code := runCLI(t, "snapshot", "-o", fresh); code != 0 {
		t.Fatalf("snapshot: exit %d: %s", code, stderr)
	}
	for _, archive := range []string{vmSnapshot, fresh} {
		out, stderr, code := runCLI(t, "doctor", "--root", archive, "--json")
		if code == 2 {
			t.Fatalf("%s: %s", archive, stderr)
		}
		if got, want := canonicalJSON(t, []byte(out)), canonicalJSON(t, embeddedDoctor(t, archive)); got != want {
			t.Errorf("%s: replay differs from capture time\n--- replay\n%s\n--- capture\n%s", archive, got, want)
		}
	}
}

func TestVMSaysNotReported(t *testing.T) {
	out, _, code := runCLI(t, "doctor", "--root", vmSnapshot, "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rep struct {
		NICs []struct {
			Interface string
			PCIe      struct {
				Reported bool     `json:"reported"`
				RawGbps  *float64 `json:"raw_gbps"`
			} `json:"pcie"`
			Limits struct {
				Bottleneck string `json:"bottleneck"`
			} `json:"limits"`
		} `json:"nics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.NICs) != 1 || rep.NICs[0].PCIe.Reported || rep.NICs[0].PCIe.RawGbps != nil || rep.NICs[0].Limits.Bottleneck != "unknown" {
		t.Errorf("VM NIC = %+v", rep.NICs)
	}
	text, _, _ := runCLI(t, "doctor", "--root", vmSnapshot)
	if !strings.Contains(text, "not reported") {
		t.Errorf("human view does not say 'not reported':\n%s", text)
	}
}

func TestDoctorExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		err  string // part of the one-line error, for exit 2
	}{
		{[]string{"doctor", "--root", hostTree("ryzen-9900x-cx5-x4")}, 1, ""},
		{[]string{"doctor", "--root", hostTree("xeon-6530-t6-healthy"), "--iface", "ens5f4"}, 0, ""},
		{[]string{"doctor", "--root", hostTree("xeon-6530-t6-healthy")}, 0, ""},
		{[]string{"doctor", "--root", hostTree("xeon-6530-t6-healthy"), "--fail-on", "warning"}, 1, ""},
		{[]string{"doctor", "--fail-on", "bogus"}, 2, "--fail-on"},
		// never: a cron job writing --prom exits 0 whatever is found
		{[]string{"doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--fail-on", "never"}, 0, ""},
		{[]string{"doctor", "--app-cpus", "0-9999"}, 2, "--app-cpus"},
		{[]string{"doctor", "--app-cpus", "4095"}, 2, "not online"},
		{[]string{"doctor", "--iface", "nosuch0"}, 2, "no such interface"},
		{[]string{"doctor", "--root", "/nonexistent"}, 2, "--root"},
		{[]string{"doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--peer", "198.18.0.2"}, 2, "cannot be combined"},
		{[]string{"doctor", "--peer", "not-an-ip"}, 2, "not an IP address"},
		{[]string{"doctor", "--rtt", "-1ms"}, 2, "--rtt"},
		{[]string{"doctor", "--bogus"}, 2, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if tt.code == 2 {
				if !strings.Contains(stderr, tt.err) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
					t.Errorf("stderr %q: want one line mentioning %q", stderr, tt.err)
				}
			}
		})
	}
}

func TestDoctorBrokenArchives(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.tar.gz")
	os.WriteFile(garbage, []byte("not gzip at all"), 0o644)
	full, _ := os.ReadFile(vmSnapshot)
	truncated := filepath.Join(dir, "truncated.tar.gz")
	os.WriteFile(truncated, full[:len(full)/2], 0o644)
	for _, archive := range []string{garbage, truncated} {
		_, stderr, code := runCLI(t, "doctor", "--root", archive)
		if code != 2 || !strings.Contains(stderr, "not a linerate snapshot") {
			t.Errorf("%s: exit %d, %q", filepath.Base(archive), code, stderr)
		}
	}
}

func TestDoctorHumanView(t *testing.T) {
	t.Setenv("COLUMNS", "200") // the loop on one line
	out, _, _ := runCLI(t, "doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--app-cpus", "6")
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes on a stream that is not a terminal")
	}
	for _, want := range []string{"enp1s0f0np0", "8.0 GT/s x4 of 8.0 GT/s x16", "DOWNGRADED", "bottleneck: PCIe",
		"CRITICAL  pcie.link_downgraded", "echo 7-11 > /proc/irq/$irq/smp_affinity_list", "numa 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("human view lacks %q", want)
		}
	}
	// Findings come critical first, and the root cause before what it
	// causes: the downgraded link before the bandwidth it leaves.
	if c, w := strings.Index(out, "CRITICAL"), strings.Index(out, "WARNING"); c < 0 || w < 0 || c > w {
		t.Error("findings not sorted by severity")
	}
	if d, b := strings.Index(out, "pcie.link_downgraded"), strings.Index(out, "pcie.bandwidth_below_line_rate"); d < 0 || b < 0 || d > b {
		t.Error("pcie.bandwidth_below_line_rate comes before its cause, pcie.link_downgraded")
	}
	// The 7950X's NIC has no NUMA affinity (-1): shown as n/a.
	out, _, _ = runCLI(t, "doctor", "--root", hostTree("ryzen-7950x-cx5-x8-roce"))
	if !strings.Contains(out, "numa n/a") || strings.Contains(out, "numa -1") {
		t.Errorf("a NUMA node of -1 is not shown as n/a:\n%s", out)
	}
}

// TestDoctorUnprivileged runs the binary as nobody: doctor must still work
// and say which facts need root.
func TestDoctorUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root to drop to an unprivileged user (CI runs as root)")
		}
		t.Skip("needs root to switch to an unprivileged user")
	}
	bin := testbin.Build(t, ".")
	os.Chmod(filepath.Dir(bin), 0o755)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "doctor", "--json", "--peer", "127.0.0.1")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		t.Fatalf("exit 2 as nobody: %s", ee.Stderr)
	}
	var rep struct {
		PathMTU struct {
			Error string `json:"error"`
		} `json:"path_mtu"`
		NICs []any `json:"nics"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if !strings.Contains(rep.PathMTU.Error, "needs root") {
		t.Errorf("unprivileged path-MTU probe: %q, want it to say it needs root", rep.PathMTU.Error)
	}
}
