package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/lab"
)

// TestLabPerftestNICCounters: a perftest run reads both ends' NIC
// counters around it, as the iperf runs do. No RDMA device can exist
// here (no soft-RoCE module), so ib_write_bw is a stand-in on PATH: the
// server waits to be stopped, the client prints the RoCE baseline report's captured
// output; the device check reads a tree holding one RDMA device. What is
// real is what this test is about: the lab's two namespaces, the server
// started in host b and stopped, and both lab0 interfaces read through
// netlink before and after.
func TestLabPerftestNICCounters(t *testing.T) {
	const name = "t-perfnic"
	h := newLab(t, name)
	capture, err := filepath.Abs("testdata/perftest-seed002-ib_write_bw.txt")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\n" +
		"# ib_write_bw stand-in: the client (its last argument the server's address) prints a capture; the server waits\n" +
		"for a; do last=$a; done\n" +
		"case $last in " + lab.AddrB + ") cat " + capture + "; exit 0;; esac\n" +
		"exec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, "ib_write_bw"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband/rxe0"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()

	d := &Perftest{Hosts: h, FS: fs}
	run, err := d.Run(context.Background(), Params{Duration: 2 * time.Second, Interval: time.Second, NoTelemetry: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Gbps(); g < 55 || g > 56 {
		t.Errorf("the run's rate %.2f Gbit/s is not the capture's 55.86", g)
	}
	nc := run.End.NICCounters
	if nc == nil || nc.Client == nil || nc.Server == nil {
		t.Fatalf("NIC counters of both ends missing: %+v", nc)
	}
	for role, e := range map[string][2]string{
		"client": {nc.Client.Interface, nc.Client.NotRead}, "server": {nc.Server.Interface, nc.Server.NotRead},
	} {
		if e[0] != lab.Iface || e[1] != "" {
			t.Errorf("%s's NIC counters: interface %q, not read %q", role, e[0], e[1])
		}
	}
	for role, dl := range map[string]map[string]uint64{"client": nc.Client.Deltas, "server": nc.Server.Deltas} {
		if _, ok := dl["qdisc_drops"]; !ok {
			t.Errorf("%s's qdisc was not read: %v", role, dl)
		}
	}
}
