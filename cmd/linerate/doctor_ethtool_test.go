package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/lab"
)

// TestLabDoctorEthtool runs doctor inside a lab host, where lab0 is a
// veth: the real ethtool netlink family answers its link modes and
// channels, and it has no module ("no module data", cleanly). A snapshot
// taken there replays to the same JSON through doctor --root.
func TestLabDoctorEthtool(t *testing.T) {
	labNeedsRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	const name = "optics"
	labUp(t, name, "healthy")

	code, live, stderr := runLab(t, "lab", "exec", name, "a", "--", bin, "doctor", "--iface", lab.Iface, "--json")
	if code != 0 {
		t.Fatalf("doctor in a: exit %d\n%s", code, stderr)
	}
	var rep struct {
		NICs []struct {
			Interface string `json:"interface"`
			Link      *struct {
				SpeedMbps *int   `json:"speed_mbps"`
				Duplex    string `json:"duplex"`
			} `json:"link"`
			Channels *struct {
				RX *int `json:"rx"`
				TX *int `json:"tx"`
			} `json:"channels"`
			Transceiver *json.RawMessage `json:"transceiver"`
		} `json:"nics"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(live), &rep); err != nil || len(rep.NICs) != 1 {
		t.Fatalf("doctor output: %v\n%s", err, live)
	}
	n := rep.NICs[0]
	if n.Link == nil || n.Link.SpeedMbps == nil || *n.Link.SpeedMbps != 10000 || n.Link.Duplex != "full" {
		t.Errorf("lab0 link modes: %+v (veth reports 10000 Mb/s full duplex)", n.Link)
	}
	if n.Channels == nil || n.Channels.RX == nil || *n.Channels.RX < 1 || n.Channels.TX == nil {
		t.Errorf("lab0 channels: %+v", n.Channels)
	}
	if n.Transceiver != nil && string(*n.Transceiver) != "null" {
		t.Errorf("lab0 has a transceiver: %s", *n.Transceiver)
	}
	if !slices.ContainsFunc(rep.Notes, func(s string) bool { return strings.HasPrefix(s, "lab0: no module data") }) {
		t.Errorf("notes do not say lab0 has no module data: %q", rep.Notes)
	}

	snap := filepath.Join(t.TempDir(), "a.tar.gz")
	if code, _, stderr := runLab(t, "lab", "exec", name, "a", "--", bin, "snapshot", "-o", snap); code != 0 {
		t.Fatalf("snapshot in a: exit %d\n%s", code, stderr)
	}
	replay, stderr, code := runCLI(t, "doctor", "--root", snap, "--iface", lab.Iface, "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	if got, want := canonicalJSON(t, []byte(replay)), canonicalJSON(t, []byte(live)); got != want {
		t.Errorf("the snapshot does not replay what doctor said live\n--- replay\n%s\n--- live\n%s", got, want)
	}
}

// TestDoctorEthtoolUnprivileged: as a user, the ethtool facts that need
// root are "not read (needs root)", never guessed, and doctor still works.
func TestDoctorEthtoolUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root to drop to an unprivileged user (CI runs as root)")
		}
		t.Skip("needs root to switch to an unprivileged user")
	}
	bin := buildLinerate(t)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "doctor", "--iface", "lo", "--json")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		t.Fatalf("exit 2 as nobody: %s", ee.Stderr)
	}
	var rep struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if !slices.Contains(rep.Notes, "lo: module EEPROM not read (needs root)") {
		t.Errorf("notes as nobody: %q", rep.Notes)
	}
}
