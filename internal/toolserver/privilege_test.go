package toolserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/testbin"
)

// procStatus reads the fields of /proc/PID/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	var m map[string]string
	for range 100 { // until it has exec'd the tool
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		m = map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				m[k] = strings.TrimSpace(v)
			}
		}
		if m["Name"] != "" && !strings.HasPrefix(m["Name"], "toolserver") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return m
}

// agentReq is a request for spec as a client on loopback makes it.
func agentReq(spec string, secret []byte) agent.ToolRequest {
	return agent.ToolRequest{Spec: json.RawMessage(spec), Bind: netip.MustParseAddr("127.0.0.1"), Secret: secret, Length: 10 * time.Second}
}

func testSecret() []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = byte(i * 7)
	}
	return s
}

// TestToolServerUnprivileged: the iperf3 server the agent (root) starts
// — which an attacker reaches before authenticating — runs as a user
// that is not root, with no capability in any set, no_new_privs, no
// supplementary group, no token in its environment, and reads
// credential files that belong to that user. Before this, it showed Uid
// 0 and CapEff 000001fffeffffff.
func TestToolServerUnprivileged(t *testing.T) {
	testbin.NeedRoot(t, "changing a tool server's user")
	needTool(t, "iperf3")
	t.Setenv("LINERATE_TOKEN", "9d41f0c27b8e36a5d0e4c1b7f2986a3e")
	id, err := ToolIdentity()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("identity: %+v", id)
	if !id.Switch || id.UID == 0 || id.GID == 0 {
		t.Fatalf("root's tool servers would run as %+v", id)
	}
	p, st, err := (AgentTools{}).StartTool(agentReq(`{"tool":"iperf3","port":5297}`, testSecret()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pid := p.(authedProc).cmd.Process.Pid
	s := procStatus(t, pid)
	uid := strconv.Itoa(int(id.UID))
	if s["Uid"] != strings.Join([]string{uid, uid, uid, uid}, "\t") || strings.HasPrefix(s["Gid"], "0") {
		t.Errorf("server runs as Uid %q Gid %q, want %s everywhere", s["Uid"], s["Gid"], uid)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if s[k] != "0000000000000000" {
			t.Errorf("%s: %s, want none", k, s[k])
		}
	}
	if s["NoNewPrivs"] != "1" || s["Groups"] != "" {
		t.Errorf("NoNewPrivs %q, Groups %q", s["NoNewPrivs"], s["Groups"])
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err != nil || cwd != "/" {
		t.Errorf("the server works in %q (%v), want /", cwd, err)
	}
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if strings.Contains(string(env), "LINERATE_TOKEN") {
		t.Error("the tool server inherited LINERATE_TOKEN")
	}
	var key string
	for i, a := range st.Argv {
		if a == "--rsa-private-key-path" && i+1 < len(st.Argv) {
			key = st.Argv[i+1]
		}
	}
	for _, f := range []string{key, filepath.Join(filepath.Dir(key), "users.csv")} {
		var fs syscall.Stat_t
		if err := syscall.Stat(f, &fs); err != nil || fs.Uid != id.UID || fs.Mode&0o777 != 0o400 {
			t.Errorf("%s: owner %d mode %o (%v), want the server's user %d, 0400", f, fs.Uid, fs.Mode&0o777, err, id.UID)
		}
	}
	// This process is untouched: still root, still every capability.
	self := procStatus(t, os.Getpid())
	if self["NoNewPrivs"] != "0" || self["CapEff"] == "0000000000000000" {
		t.Errorf("the agent itself lost its privileges: NoNewPrivs %s CapEff %s", self["NoNewPrivs"], self["CapEff"])
	}
}

// TestIperf3SurvivesStrayConnection: a stranger who connects to the
// agent's iperf3 server and closes before the client comes no longer
// ends it (iperf3 -s -1 counted that connection as its one test and
// exited); the client with the credentials then runs.
func TestIperf3SurvivesStrayConnection(t *testing.T) {
	needTool(t, "iperf3")
	secret := testSecret()
	const port = 5296
	p, st, err := (AgentTools{}).StartTool(agentReq(fmt.Sprintf(`{"tool":"iperf3","port":%d}`, port), secret))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var c net.Conn
	for range 100 {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	time.Sleep(300 * time.Millisecond) // the server has read the EOF by now
	ca, err := ClientAuthFor("iperf3", secret, st.Auth)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	out, err := ca.Command(context.Background(), []string{"iperf3", "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J"}).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"sum_received"`) {
		_, srvOut, _ := p.Stop()
		t.Fatalf("the client after a stray connection: %v\n%s\nserver:\n%s", err, out, srvOut)
	}
}

// TestIperf2PermitKeyRedacted: the iperf permit key is in neither the
// command line the agent reports (its log, tool_started, stored runs)
// nor the server's output it hands back, though the server ran with it
// and printed it.
func TestIperf2PermitKeyRedacted(t *testing.T) {
	needTool(t, "iperf")
	secret := testSecret()
	creds, err := credsFrom(secret)
	if err != nil {
		t.Fatal(err)
	}
	p, st, err := (AgentTools{}).StartTool(agentReq(`{"tool":"iperf","port":5295}`, secret))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p.(authedProc).cmd.Process.Pid) + "/cmdline")
	_, out, _ := p.Stop()
	argv := strings.Join(st.Argv, " ")
	if !strings.Contains(string(cmdline), creds.permitKey) {
		t.Fatalf("the server did not run with the key: %q", cmdline)
	}
	if strings.Contains(argv, creds.permitKey) || !strings.Contains(argv, "--permit-key=REDACTED --permit-key-timeout "+permitKeyWindow) {
		t.Errorf("reported argv %q", argv)
	}
	if strings.Contains(out, creds.permitKey) || !strings.Contains(out, "Permit key is") {
		t.Errorf("server output:\n%s", out)
	}
}

// TestIperf3Advisory: versions before a fix are warned about, with the
// fixes they lack; 3.18 and later, other majors and junk are not.
func TestIperf3Advisory(t *testing.T) {
	for _, c := range []struct {
		version string
		want    []string // CVEs named; nil: no warning
	}{
		{"iperf 3.12 (cJSON 1.7.15)\nLinux vm 6.18", []string{"CVE-2023-38403", "CVE-2023-7250", "CVE-2024-53580"}},
		{"iperf 3.14 (cJSON 1.7.15)", []string{"CVE-2023-7250", "CVE-2024-53580"}},
		{"iperf 3.17.1 (cJSON 1.7.15)", []string{"CVE-2024-53580"}},
		{"iperf 3.18 (cJSON 1.7.15)", nil},
		{"iperf 3.19.1", nil},
		{"iperf 2.1.8", nil},
		{"garbage", nil},
		{"", nil},
	} {
		got := iperf3Advisory(c.version)
		if (got == "") != (c.want == nil) {
			t.Errorf("%q: %q", c.version, got)
		}
		for _, cve := range c.want {
			if !strings.Contains(got, cve) {
				t.Errorf("%q: %q does not name %s", c.version, got, cve)
			}
		}
		if strings.Contains(got, "CVE-2023-38403") && !strings.HasPrefix(c.version, "iperf 3.12") {
			t.Errorf("%q: names a CVE fixed in it: %q", c.version, got)
		}
	}
}

// TestEnvironScrubbed: tool clients and servers get this process's
// environment without linerate's variables (the token) or an iperf3
// password it inherited; the client's own password is added.
func TestEnvironScrubbed(t *testing.T) {
	t.Setenv("LINERATE_TOKEN", "secret-token")
	t.Setenv("LINERATE_STATE_DIR", "/x")
	t.Setenv("IPERF3_PASSWORD", "inherited")
	t.Setenv("H2_KEEP", "kept")
	env := strings.Join(Environ(), "\n")
	if strings.Contains(env, "secret-token") || strings.Contains(env, "LINERATE_") || strings.Contains(env, "inherited") || !strings.Contains(env, "H2_KEEP=kept") {
		t.Errorf("Environ:\n%s", env)
	}
	out, err := Command(context.Background(), []string{"env"}).Output()
	if err != nil || strings.Contains(string(out), "LINERATE_TOKEN") || !strings.Contains(string(out), "H2_KEEP=kept") {
		t.Errorf("a client's environment (%v):\n%s", err, out)
	}
	ca := ClientAuth{env: []string{"IPERF3_PASSWORD=mine"}}
	out, _ = ca.Command(context.Background(), []string{"env"}).Output()
	if !strings.Contains(string(out), "IPERF3_PASSWORD=mine") || strings.Contains(string(out), "inherited") || strings.Contains(string(out), "secret-token") {
		t.Errorf("an iperf3 client's environment:\n%s", out)
	}
}

// authHolder stands in for an agent: it starts an authenticated iperf3
// server as the agent does, prints the server's PID and its credentials'
// directory, and waits to be killed.
func authHolder(port string) int {
	p, st, err := (AgentTools{}).StartTool(agentReq(`{"tool":"iperf3","port":`+port+`}`, testSecret()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i, a := range st.Argv {
		if a == "--rsa-private-key-path" {
			fmt.Println(p.(authedProc).cmd.Process.Pid, filepath.Dir(st.Argv[i+1]))
		}
	}
	select {}
}

// TestCleanStaleAuthDirs: an agent killed with SIGKILL leaves its iperf3
// credentials' directory (the private key) behind; the next agent's
// CleanStale removes it, and leaves a live agent's, links, and what is
// not its own alone.
func TestCleanStaleAuthDirs(t *testing.T) {
	needTool(t, "iperf3")
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), "TOOLSERVER_TEST_AUTH_PORT=5294")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	if _, err := fmt.Fscan(bufio.NewReader(out), &pid, &dir); err != nil || !strings.Contains(dir, authDirPrefix) {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("holder: %v %q", err, dir)
	}
	// A live agent's directory stays.
	if _, err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("CleanStale removed a running agent's credentials: %v", err)
	}
	holder.Process.Kill()
	holder.Wait()
	if _, err := os.Stat(filepath.Join(dir, "private.pem")); err != nil {
		t.Fatalf("the killed agent's key is already gone (%v): nothing to clean", err)
	}
	// A link named like a stale directory is not followed.
	target := t.TempDir()
	link := filepath.Join(os.TempDir(), authDirPrefix+"999999999-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	if _, err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		os.RemoveAll(dir)
		t.Errorf("the killed agent's credentials are still there: %v", err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target was removed: %v", err)
	}
	// The killed agent's server died with it (Pdeathsig survives the
	// change of user).
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("tool server %d outlived its agent by 5 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartMemlock: a perftest server, which registers its buffers with
// the RDMA device and so locks them, starts with no locked-memory limit
// though it has no CAP_IPC_LOCK — where this process may raise limits
// (CAP_SYS_RESOURCE; some sandboxes withhold it from root, and then the
// server starts with the limit as it is); this process's own limit is
// as it was.
func TestStartMemlock(t *testing.T) {
	testbin.NeedRoot(t, "raising RLIMIT_MEMLOCK")
	var before unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &before); err != nil {
		t.Fatal(err)
	}
	eff, _, err := capSets()
	if err != nil {
		t.Fatal(err)
	}
	canRaise := eff&capBit(unix.CAP_SYS_RESOURCE) != 0
	t.Logf("CAP_SYS_RESOURCE: %v; limit %+v", canRaise, before)
	for _, memlock := range []bool{true, false} {
		cmd := exec.Command("sleep", "10")
		if err := startMemlock(cmd, memlock); err != nil {
			t.Fatal(err)
		}
		var got unix.Rlimit
		err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_MEMLOCK, nil, &got)
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if unlimited := got.Cur == unix.RLIM_INFINITY && got.Max == unix.RLIM_INFINITY; unlimited != (memlock && canRaise || before.Cur == unix.RLIM_INFINITY) {
			t.Errorf("memlock %v: the child's limit is %+v (this process's: %+v)", memlock, got, before)
		}
	}
	var after unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, nil, &after); err != nil || after != before {
		t.Errorf("this process's limit went from %+v to %+v (%v)", before, after, err)
	}
}

// TestCleanStaleNoTmp: an image without a temporary directory (distroless,
// as on Kubernetes) has nothing to clean, and that is no error to log.
func TestCleanStaleNoTmp(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
	if n, err := CleanStale(); n != 0 || err != nil {
		t.Errorf("CleanStale without a temporary directory: %d, %v", n, err)
	}
}
