package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/osthread"
)

// serverStatus is /proc/PID/status of this process's child running tool
// with -s (the server, not the client), or nil while there is none.
func serverStatus(tool string) map[string]string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), tool+"\x00-s\x00") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		st := map[string]string{"Pid": strconv.Itoa(pid)}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				st[k] = strings.TrimSpace(v)
			}
		}
		if st["PPid"] == strconv.Itoa(os.Getpid()) {
			return st
		}
	}
	return nil
}

// TestLabToolServerUnprivileged: during `bench lab:NAME --engine iperf3`
// the iperf3 server in the peer's namespace runs as a user that is not
// root, with no capability and no_new_privs (read from /proc while the
// run goes on); and strangers in the lab who connect to its port and
// close, from before it listens until the run ends, do not end it (with
// iperf3 -s -1 the first of them did, and the bench failed).
func TestLabToolServerUnprivileged(t *testing.T) {
	h := newLab(t, "t-bpriv")
	needTool(t, "iperf3")
	d := labDriver(t, "iperf3", h)
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var strays atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Sockets belong to the namespace of the thread that makes them.
		osthread.Throwaway(func() error {
			if err := lab.Enter("t-bpriv", lab.A); err != nil {
				t.Error(err)
				return nil
			}
			addr := net.JoinHostPort(lab.AddrB, strconv.Itoa(iperf3Port))
			for ctx.Err() == nil {
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					strays.Add(1)
				}
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		})
	}()
	var seen map[string]string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil && seen == nil {
			seen = serverStatus("iperf3")
			time.Sleep(50 * time.Millisecond)
		}
	}()
	r, err := d.Run(ctx, Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: 3 * time.Second, Interval: time.Second}}}, nil)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("bench beside %d stray connections: %v", strays.Load(), err)
	}
	t.Logf("%d stray connections; server: Uid %q CapEff %q CapBnd %q NoNewPrivs %q", strays.Load(), seen["Uid"], seen["CapEff"], seen["CapBnd"], seen["NoNewPrivs"])
	if strays.Load() == 0 || len(r.Intervals) < 2 {
		t.Errorf("%d stray connections, %d intervals", strays.Load(), len(r.Intervals))
	}
	if seen == nil {
		t.Fatal("no iperf3 server seen while the run went on")
	}
	if uid := strings.Fields(seen["Uid"]); len(uid) != 4 || slices.Contains(uid, "0") {
		t.Errorf("the server runs as Uid %q", seen["Uid"])
	}
	if seen["CapEff"] != "0000000000000000" || seen["CapPrm"] != "0000000000000000" || seen["NoNewPrivs"] != "1" {
		t.Errorf("the server has CapEff %s CapPrm %s NoNewPrivs %s", seen["CapEff"], seen["CapPrm"], seen["NoNewPrivs"])
	}
}
