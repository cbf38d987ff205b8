package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
)

// TestNamespaces runs the agent and the client as two processes in the two
// hosts of a lab: real namespaces, a real veth, as on two machines.
func TestNamespaces(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	needRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-engine"
	ctx := context.Background()
	if _, err := lab.Up(ctx, lab.Config{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	for _, dir := range []result.Direction{result.Send, result.Receive} {
		t.Run(string(dir), func(t *testing.T) {
			res := labRun(t, name, dir)
			checkEnd(t, res)
			if res.Start.Client.Iface != lab.Iface || res.Start.Server.Iface != lab.Iface {
				t.Errorf("interfaces: client %q, agent %q; want %s on both", res.Start.Client.Iface, res.Start.Server.Iface, lab.Iface)
			}
			if res.Start.Peer != lab.AddrB {
				t.Errorf("peer = %q", res.Start.Peer)
			}
			// One machine: the two ends take different CPUs, unless the
			// look before the run found the other busy (then both avoid
			// it, and the start's notes say so).
			p := res.Start.Placement
			avoided := slices.ContainsFunc(res.Start.Notes, func(n string) bool { return strings.HasPrefix(n, "placement: ") })
			for _, c := range p.Client {
				if slices.Contains(p.Server, c) && len(res.Start.Client.CPUs) > 1 && !avoided {
					t.Errorf("one machine, two namespaces: client and agent share CPU %d with no busy CPU noted: %+v, notes %q", c, p, res.Start.Notes)
				}
			}
		})
	}
}

// labRun starts a one-test agent in host b and a client in host a.
func labRun(t *testing.T, name string, dir result.Direction) *result.Result {
	t.Helper()
	addr := lab.AddrB + ":5301"
	env := append(os.Environ(), TokenEnv+"="+string(testToken), "DIRECTION="+string(dir))
	srv := exec.Command(os.Args[0], addr)
	srv.Env = append(env, helperEnv+"=serve")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(name, lab.B, srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Wait(); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, ListeningPrefix) {
		srv.Process.Kill()
		t.Fatalf("agent: %q %v", line, err)
	}
	cli := exec.Command(os.Args[0], addr, "1")
	cli.Env = append(env, helperEnv+"=client")
	cli.Stderr = os.Stderr
	cout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(name, lab.A, cli); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(cout)
	r.ReadString('\n') // "started"
	var res result.Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		t.Errorf("client output: %v", err)
	}
	if err := cli.Wait(); err != nil {
		t.Fatalf("client: %v", err)
	}
	return &res
}
