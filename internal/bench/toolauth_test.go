package bench

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/testutil"
	"github.com/linerate/linerate/internal/toolserver"
)

// needTool fails in CI and skips elsewhere when a real tool is missing:
// these tests run the real thing, never a stand-in.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed and CI=true: install it (Debian: apt-get install %s)", name, name)
	}
	t.Skipf("%s not installed", name)
}

// benchToken is a token of 256 random bits, as GenerateToken makes them.
var benchToken = []byte("9d41f0c27b8e36a5d0e4c1b7f2986a3e5c07d1b94f62e8a0c3b5d7e91f4a2608")

// loopbackAgent runs an agent with bench's tool starter on 127.0.0.1.
func loopbackAgent(t *testing.T, tools toolserver.AgentTools) (string, *testutil.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	srv := &agent.Server{Token: benchToken, Tools: tools, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	return ln.Addr().String(), logs
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestAgentIperf3Authenticates: the iperf3 server an agent starts turns
// away a client without the one-time credentials (real iperf3, loopback),
// then serves the client that has them, as the driver runs it.
func TestAgentIperf3Authenticates(t *testing.T) {
	needTool(t, "iperf3")
	addr, _ := loopbackAgent(t, toolserver.AgentTools{})
	hosts := &AgentHosts{Peer: addr, Token: benchToken, Interval: time.Second}
	port := freeLoopbackPort(t)
	srv, argv, err := hosts.StartServer(context.Background(), toolserver.ToolServer{Tool: "iperf3", Port: port}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	cmdline := strings.Join(argv, " ")
	if !strings.Contains(cmdline, "-B 127.0.0.1") || !strings.Contains(cmdline, "--authorized-users-path") || !strings.Contains(cmdline, "--rsa-private-key-path") {
		t.Fatalf("the agent's iperf3 server: %s", cmdline)
	}
	var out []byte
	for range 50 { // the server may not listen yet
		out, err = exec.Command("iperf3", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J").CombinedOutput()
		if !strings.Contains(string(out), "unable to connect") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// iperf3 -J exits 0 with an "error" member when refused.
	if refused := strings.Contains(string(out), "test authorization failed"); !refused || strings.Contains(string(out), `"sum_received"`) {
		t.Fatalf("a client without credentials got a test from the agent's iperf3 (%v):\n%s", err, out)
	}
	// With a made-up password, still nothing.
	// (the credentials of another session's secret, with this server's key).
	bad, err := toolserver.ClientAuthFor("iperf3", make([]byte, 32), srv.(agentServer).ts.Auth())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	out, err = bad.Command(context.Background(), []string{"iperf3", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J"}).CombinedOutput()
	if refused := strings.Contains(string(out), "test authorization failed"); !refused || strings.Contains(string(out), `"sum_received"`) {
		t.Fatalf("a client with the wrong password got a test (%v):\n%s", err, out)
	}
	// The authenticated client runs.
	out, err = authOf(srv).Command(context.Background(), []string{"iperf3", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J"}).CombinedOutput()
	if err != nil {
		t.Fatalf("the client with the credentials: %v\n%s", err, out)
	}
	var res struct {
		End struct {
			SumReceived struct{ Bytes uint64 } `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.End.SumReceived.Bytes == 0 {
		t.Errorf("the authenticated run moved nothing: %v\n%s", err, out)
	}
	_, srvOut, _ := srv.Stop()
	if !strings.Contains(srvOut, "authorization failed") {
		t.Errorf("the server did not say it refused the others:\n%s", srvOut)
	}
}

// TestAgentIperf2PermitKey: the iperf2 server an agent starts drops a
// client without the permit key, and serves the driver's client.
func TestAgentIperf2PermitKey(t *testing.T) {
	needTool(t, "iperf")
	addr, _ := loopbackAgent(t, toolserver.AgentTools{})
	hosts := &AgentHosts{Peer: addr, Token: benchToken, Interval: time.Second}
	port := freeLoopbackPort(t)
	srv, argv, err := hosts.StartServer(context.Background(), toolserver.ToolServer{Tool: "iperf", Port: port}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if !strings.Contains(strings.Join(argv, " "), "--permit-key=REDACTED") {
		t.Fatalf("the agent's iperf server: %v", argv)
	}
	client := []string{"iperf", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-y", "C"}
	time.Sleep(300 * time.Millisecond) // iperf2's server has no sign of readiness
	exec.Command(client[0], client[1:]...).Run()
	out, err := authOf(srv).Command(context.Background(), client).CombinedOutput()
	if err != nil {
		t.Fatalf("the client with the key: %v\n%s", err, out)
	}
	_, srvOut, _ := srv.Stop()
	if !strings.Contains(srvOut, "permit key fail") {
		t.Errorf("the server did not drop the keyless client:\n%s", srvOut)
	}
	if !strings.Contains(srvOut, "connected with 127.0.0.1") {
		t.Errorf("the server did not serve the client with the key:\n%s", srvOut)
	}
}

// permitKey matches an iperf permit key as the agent makes them.
var permitKey = regexp.MustCompile(`permit-key=[0-9a-f]{32}`)

// TestAgentIperf2KeyNotKept: a whole iperf2 run through an agent keeps
// the permit key out of the agent's log (tool started), the server's
// command line it reported (tool_started) and the run as stored or
// printed with --json; the client still ran with it. Before, all three
// held it in clear.
func TestAgentIperf2KeyNotKept(t *testing.T) {
	needTool(t, "iperf")
	addr, logs := loopbackAgent(t, toolserver.AgentTools{})
	d := &Iperf2{Hosts: &AgentHosts{Peer: addr, Token: benchToken, Interval: time.Second}}
	r, err := d.Run(context.Background(), Params{Test: agent.Test{Params: engine.Params{Streams: 2, Duration: time.Second, Interval: time.Second}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "tool started") || !strings.Contains(strings.Join(r.Tool.Server, " "), "--permit-key=REDACTED") {
		t.Errorf("no redacted key where expected: server %q, log:\n%s", r.Tool.Server, logs.String())
	}
	for what, text := range map[string]string{"the agent's log": logs.String(), "the stored run": string(doc)} {
		if k := permitKey.FindString(text); k != "" {
			t.Errorf("%s holds the permit key: %s", what, k)
		}
	}
	if r.End.SumReceived.Bytes == 0 {
		t.Errorf("the run moved nothing: %+v", r.End)
	}
}

// TestAgentPerftestNeedsAllow: perftest servers take no authentication,
// so an agent starts them only when its operator allowed it.
func TestAgentPerftestNeedsAllow(t *testing.T) {
	addr, _ := loopbackAgent(t, toolserver.AgentTools{})
	hosts := &AgentHosts{Peer: addr, Token: benchToken, Interval: time.Second}
	_, _, err := hosts.StartServer(context.Background(), toolserver.ToolServer{Tool: "ib_write_bw"}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "--allow-perftest") {
		t.Errorf("perftest without --allow-perftest: %v", err)
	}
}

// TestAgentTargetTokenHint: without a token, bench says where the token
// comes from (the agent's --token-file), not that the agent printed it:
// it never does.
func TestAgentTargetTokenHint(t *testing.T) {
	_, err := NewTarget(context.Background(), TargetConfig{Peer: "127.0.0.1", Driver: "iperf3"})
	if err == nil || strings.Contains(err.Error(), "printed") || !strings.Contains(err.Error(), "--new-token-file") {
		t.Errorf("no token: %v", err)
	}
}
