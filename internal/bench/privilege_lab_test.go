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
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/toolserver"
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

// strayHosts is a lab whose host a, once the tool server listens and
// before the client starts, connects to the server's port and closes
// without a word: a stranger's probe.
type strayHosts struct {
	*LabHosts
	port   int
	strays int
}

func (s *strayHosts) StartServer(ctx context.Context, ts toolserver.ToolServer, length time.Duration) (ServerProc, []string, error) {
	p, argv, err := s.LabHosts.StartServer(ctx, ts, length)
	if err != nil {
		return p, argv, err
	}
	// Sockets belong to the namespace of the thread that makes them.
	osthread.Throwaway(func() error {
		if err := lab.Enter(s.Name, lab.A); err != nil {
			return err
		}
		addr := net.JoinHostPort(lab.AddrB, strconv.Itoa(s.port))
		for range 250 { // until it listens
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				s.strays++
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // the server has read the EOF by now
	return p, argv, nil
}

// TestLabToolServerUnprivileged: during `bench lab:NAME --engine iperf3`
// the iperf3 server in the peer's namespace runs as a user that is not
// root, with no capability and no_new_privs (read from /proc while the
// run goes on); and a stranger in the lab who connects to its port and
// closes before the client comes does not end it (iperf3 -s -1 took that
// connection for its one test and exited, and the bench failed).
func TestLabToolServerUnprivileged(t *testing.T) {
	h := newLab(t, "t-bpriv")
	needTool(t, "iperf3")
	hosts := &strayHosts{LabHosts: h, port: iperf3Port}
	d := &Iperf3{Hosts: hosts}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
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
		t.Fatalf("bench after %d stray connection: %v", hosts.strays, err)
	}
	t.Logf("%d stray connection; server: Uid %q CapEff %q CapBnd %q NoNewPrivs %q", hosts.strays, seen["Uid"], seen["CapEff"], seen["CapBnd"], seen["NoNewPrivs"])
	if hosts.strays != 1 || len(r.Intervals) < 2 {
		t.Errorf("%d stray connections, %d intervals", hosts.strays, len(r.Intervals))
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
