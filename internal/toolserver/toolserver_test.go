package toolserver

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
)

// TestMain doubles as the agent TestToolServerDiesWithAgent kills.
func TestMain(m *testing.M) {
	if port := os.Getenv("TOOLSERVER_TEST_PORT"); port != "" {
		os.Exit(toolServerHolder(port))
	}
	if port := os.Getenv("TOOLSERVER_TEST_AUTH_PORT"); port != "" {
		os.Exit(authHolder(port))
	}
	os.Exit(m.Run())
}

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

func TestToolServerAllowlist(t *testing.T) {
	for _, c := range []struct {
		t    ToolServer
		want string
	}{
		{ToolServer{Tool: "iperf3", Port: 5201, Bind: "198.18.0.2"}, "iperf3 -s -p 5201 -B 198.18.0.2"},
		{ToolServer{Tool: "iperf"}, "iperf -s"},
		{ToolServer{Tool: "ib_write_bw", Streams: 4, Perftest: PerftestParams{Device: "mlx5_0", GID: 3}},
			"ib_write_bw --report_gbits -s 1048576 -n 5000 -q 4 -d mlx5_0 -x 3"},
		{ToolServer{Tool: "ib_send_lat"}, "ib_send_lat --report_gbits -s 8 -n 10000"},
	} {
		argv, err := c.t.Argv()
		if err != nil || strings.Join(argv, " ") != c.want {
			t.Errorf("%+v: %q %v, want %q", c.t, argv, err, c.want)
		}
	}
	for _, bad := range []ToolServer{
		{Tool: "sh"}, {Tool: "iperf3", Bind: "1.2.3.4; rm -rf /"}, {Tool: "iperf3", Port: 70000},
		{Tool: "ib_write_bw", Perftest: PerftestParams{Device: "../x"}}, {Tool: "iperf", CPUs: []int{-1}},
		{Tool: "ib_read_bw", Perftest: PerftestParams{Size: -5}},
	} {
		if argv, err := bad.Argv(); err == nil {
			t.Errorf("%+v allowed: %q", bad, argv)
		}
	}
}

// TestStartToolServerPins starts an iperf3 server on loopback pinned to
// the last CPU and reads its affinity back from /proc.
func TestStartToolServerPins(t *testing.T) {
	needTool(t, "iperf3")
	cpu := 0
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		f := strings.FieldsFunc(strings.TrimSpace(string(b)), func(r rune) bool { return r == '-' || r == ',' })
		cpu, _ = strconv.Atoi(f[len(f)-1])
	}
	srv, err := Start(ToolServer{Tool: "iperf3", Port: 15201, Bind: "127.0.0.1", CPUs: []int{cpu}})
	if err != nil {
		t.Fatal(err)
	}
	ls := srv
	var allowed string
	for range 50 {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(ls.cmd.Process.Pid) + "/status")
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				allowed = strings.TrimSpace(v)
			}
		}
		if allowed != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Stop()
	if allowed != strconv.Itoa(cpu) {
		t.Errorf("server allowed on %q, want %d", allowed, cpu)
	}
	// This process is not pinned by it.
	b, _ := os.ReadFile("/proc/self/status")
	if strings.Contains(string(b), "Cpus_allowed_list:\t"+strconv.Itoa(cpu)+"\n") && cpu != 0 {
		t.Error("the test process itself got pinned")
	}
}

// TestAgentToolsRefuse: what a client asks the agent to start is checked
// before anything runs — privileged ports, tools off the allowlist, junk —
// and the bind address is the agent's own, whatever the client wrote.
func TestAgentToolsRefuse(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	secret := make([]byte, 32)
	req := func(spec string) agent.ToolRequest {
		return agent.ToolRequest{Spec: json.RawMessage(spec), Bind: lo, Secret: secret, Length: time.Second}
	}
	for _, spec := range []string{
		`{"tool":"iperf3","port":22}`,
		`{"tool":"sh"}`,
		`{"tool":"iperf3","cpus":[-1]}`,
		`{"tool":"ib_write_bw"}`, // perftest, not allowed
		`not json`,
	} {
		if p, st, err := (AgentTools{}).StartTool(req(spec)); err == nil {
			p.Stop()
			t.Errorf("%s started: %q", spec, st.Argv)
		}
	}
	needTool(t, "iperf3")
	p, st, err := (AgentTools{}).StartTool(req(`{"tool":"iperf3","port":5299,"bind":"0.0.0.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if got := strings.Join(st.Argv, " "); !strings.HasPrefix(got, "iperf3 -s -p 5299 -B 127.0.0.1 --rsa-private-key-path ") {
		t.Errorf("argv %q: the tool must bind where the agent listens, with credentials", got)
	}
}

// TestServerOutputBounded: a tool server's output is kept to its last
// serverOutputMax bytes, however much it prints.
func TestServerOutputBounded(t *testing.T) {
	var b tailBuffer
	line := []byte(strings.Repeat("x", 999) + "\n")
	for range 1000 {
		if n, err := b.Write(line); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	b.Write([]byte("the end\n"))
	got := b.String()
	if len(got) != serverOutputMax || !strings.HasSuffix(got, "x\nthe end\n") {
		t.Errorf("kept %d bytes ending %q", len(got), got[max(0, len(got)-12):])
	}
	b.Write(make([]byte, 3*serverOutputMax))
	if len(b.String()) != serverOutputMax {
		t.Errorf("after one huge write: %d bytes", len(b.String()))
	}
}

// toolServerHolder stands in for an agent: it starts an iperf3 server the
// way the agent does, prints its PID and waits to be killed.
func toolServerHolder(port string) int {
	p, _ := strconv.Atoi(port)
	srv, err := Start(ToolServer{Tool: "iperf3", Port: p, Bind: "127.0.0.1", CPUs: []int{0}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(srv.cmd.Process.Pid)
	select {}
}

// TestToolServerDiesWithAgent: an agent killed with SIGKILL takes the tool
// servers it started with it, so no port stays open that nobody asked
// for.
func TestToolServerDiesWithAgent(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatal("iperf3 is not installed: apt-get install iperf3")
	}
	const port = "5298"
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), "TOOLSERVER_TEST_PORT="+port)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil || pid <= 0 {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("no tool server PID: %v", err)
	}
	holder.Process.Kill()
	holder.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			break // gone, or a zombie waiting for init to reap it
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("tool server %d outlived its agent by 5 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
