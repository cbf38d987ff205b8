package snapshot

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
)

// TestDCBRoundTrip records the healthy RoCE host as `linerate snapshot`
// does, with DCB read "live" (here: a reader that answers with PFC on
// priority 4 while RoCE's DSCP 26 goes to 3, where the tree's own file is
// healthy, so the replay can only be right by reading what the capture
// recorded), and checks that the snapshot
// holds linerate/dcb/<iface>/ieee.json and that doctor on it gives the
// same report as at capture time.
func TestDCBRoundTrip(t *testing.T) {
	tmpdir(t)
	fs, err := hostfs.New(filepath.Join("..", "..", "testdata", "hosts", "roce-healthy"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rec := fs.Record()
	host := "firmware"
	live := &dcb.IEEE{PFC: &dcb.PFC{Enabled: []int{4}, Cap: 8}, App: []dcb.App{{Selector: "dscp", Protocol: 26, Priority: 3}}, DCBX: &host}
	asked := 0
	inv, err := inventory.Collect(fs, inventory.Options{DCB: func(iface string) *dcb.Reading {
		asked++
		r := &dcb.Reading{Config: live}
		files, err := r.Files()
		if err != nil {
			t.Fatal(err)
		}
		for p, b := range files {
			rec.Add(dcb.Dir(iface)+"/"+p, b)
		}
		return r
	}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := doctor.Diagnose(inv, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 1 || len(before.Findings) == 0 || before.Findings[0].ID != "roce.trust_mismatch" {
		t.Fatalf("asked %d, findings %+v", asked, before.Findings)
	}
	entries := rec.Entries()
	if !slices.ContainsFunc(entries, func(e hostfs.Entry) bool { return e.Path == "linerate/dcb/enp51s0np0/ieee.json" }) {
		t.Fatal("the snapshot lacks linerate/dcb/enp51s0np0/ieee.json")
	}
	out := filepath.Join(t.TempDir(), "roce.tar.gz")
	if err := WriteFile(out, entries, testMeta()); err != nil {
		t.Fatal(err)
	}
	replayFS, cleanup, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	inv2, err := inventory.Collect(replayFS, inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := doctor.Diagnose(inv2, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("doctor on the snapshot differs from doctor at capture:\n%s\n%s", a, b)
	}
}
