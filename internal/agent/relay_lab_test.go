package agent

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
)

// TestRelayInLab: agents in three hosts of a lab of many hosts, the
// controller at the lab's switch (198.18.0.254), which reaches the agents
// but is neither end of any test: h01 tests toward h02, then h03 receives
// from h01; each result names the hosts that ran it, over their lab0.
func TestRelayInLab(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	needRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-relay"
	ctx := context.Background()
	if _, err := lab.Up(ctx, lab.Config{Name: name, Hosts: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	for i := 1; i <= 3; i++ {
		labAgent(t, name, lab.HostN(i))
	}
	dial, err := lab.Dialer(name, lab.Switch)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		from, to lab.Host
		dir      result.Direction
	}{{"h01", "h02", result.Send}, {"h01", "h03", result.Receive}} {
		res, err := RunRemote(ctx, Remote{From: tt.from.Addr(), Dial: dial, Config: Config{Peer: tt.to.Addr() + ":5301", Token: testToken, Test: Test{Params: engine.Params{Duration: time.Second, Interval: 250 * time.Millisecond, Direction: tt.dir}}}})
		if err != nil {
			t.Fatalf("%s → %s: %v", tt.from, tt.to, err)
		}
		checkEnd(t, res)
		st := res.Start
		if st.Client.Hostname != lab.Namespace(name, tt.from) || st.Server.Hostname != lab.Namespace(name, tt.to) {
			t.Errorf("%s → %s ran between %s and %s", tt.from, tt.to, st.Client.Hostname, st.Server.Hostname)
		}
		if st.Peer != tt.to.Addr() || st.Client.Iface != lab.Iface || st.Server.Iface != lab.Iface || st.Direction != tt.dir {
			t.Errorf("%s → %s: peer %s, interfaces %q and %q, direction %s", tt.from, tt.to, st.Peer, st.Client.Iface, st.Server.Iface, st.Direction)
		}
	}
	// The switch is not an agent's peer: a probe from it names each host.
	for i := 1; i <= 3; i++ {
		h := lab.HostN(i)
		info, err := Probe(ctx, dial, h.Addr(), testToken)
		if err != nil || info.Hostname != lab.Namespace(name, h) {
			t.Errorf("probe of %s: %+v, %v", h, info, err)
		}
	}
}

// labAgent starts an agent (this test binary's serve helper, until
// SIGTERM) in host h of lab name, listening on the host's address.
func labAgent(t *testing.T, name string, h lab.Host) {
	t.Helper()
	srv := exec.Command(os.Args[0], h.Addr()+":5301")
	srv.Env = append(os.Environ(), TokenEnv+"="+string(testToken), helperEnv+"=serve", "ONCE=0", "RELAY_PEERS=198.18.0.0/15")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(name, h, srv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- srv.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent in %s: %v", h, err)
			}
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			t.Errorf("agent in %s did not stop on SIGTERM", h)
		}
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, ListeningPrefix) {
		t.Fatalf("agent in %s: %q %v", h, line, err)
	}
}
