package main

// The mesh in a lab of 8 hosts, through the command line as a user runs
// it: one lab for every case. Run under the lab lock:
// flock /tmp/linerate-lab.lock go test -run TestMeshLab ./cmd/linerate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/fleet/launch"
	"github.com/linerate/linerate/internal/fleet/launch/launchtest"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/mesh"
)

// cli runs the built binary with args and returns its exit status and
// output.
func cli(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	c := exec.Command(bin, args...)
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// meshAgents lists the pids of the agents of lab name's mesh that bin
// started (bin, or bin relative to the home directory, as the ssh launcher
// runs the binary it copied).
func meshAgents(bin, name string) []int {
	home, _ := os.UserHomeDir()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 1 && (args[0] == bin || filepath.Join(home, args[0]) == bin) && args[1] == "serve" && slices.Contains(args, name) {
			out = append(out, pid)
		}
	}
	return out
}

// cpuTicks is a process's user and system time, in clock ticks.
func cpuTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, true
}

// rssMB is a process's resident memory (VmRSS), in MB.
func rssMB(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "21876 kB"
			kb, err := strconv.ParseFloat(f[0], 64)
			return kb * 1024 / 1e6, err == nil && len(f) == 2 && f[1] == "kB"
		}
	}
	return 0, false
}

func meshStatusDoc(t *testing.T, bin, name string, sch *jsonschema.Schema) (int, *mesh.Doc) {
	t.Helper()
	code, out, stderr := cli(t, bin, "mesh", "status", "--name", name, "--json")
	if code != 0 && code != 1 {
		t.Fatalf("mesh status: exit %d\n%s%s", code, out, stderr)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("mesh status --json does not validate against mesh-v1.schema.json: %v\n%s", err, out)
	}
	var d mesh.Doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return code, &d
}

func suspectsOf(d *mesh.Doc) []string {
	var s []string
	for _, x := range d.Suspects {
		s = append(s, x.Kind+" "+x.Name+" "+x.Side)
	}
	return s
}

// TestMeshLab: in a lab of 8 hosts, 'mesh up --lab' starts 8 agents; after
// 45 s every one of the 56 directed pairs is ok and nothing is suspected,
// and each agent costs at most 1% of a CPU and 30 MB; 5% random loss on h03's lab0
// egress (nftables) is suspected on h03's send side within 90 s, and
// nothing else is; an agent killed is named, its host down; 'mesh down'
// leaves no agent; Ctrl-C of 'mesh up' leaves none either; and 'lab down'
// leaves no namespace.
func TestMeshLab(t *testing.T) {
	labNeedsRoot(t)
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("the mesh's lab runs for minutes; -short skips it")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("nft (nftables) is needed to plant loss: apt-get install nftables")
	}
	sch, err := jsonschema.NewCompiler().Compile("../../docs/schema/mesh-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	const name = "t-mesh8"
	bin := buildLinerate(t)
	t.Cleanup(func() { // after the lab's own cleanup, which takes it down
		if ns, _ := filepath.Glob("/run/netns/lr-" + name + "-*"); len(ns) > 0 {
			t.Errorf("namespaces left after lab down: %q", ns)
		}
	})
	members := launchtest.LabWith(t, lab.Config{Name: name, Hosts: 8})
	t.Cleanup(func() { cli(t, bin, "mesh", "down", "--name", name) })

	t.Run("ctrl-c of up", func(t *testing.T) {
		c := exec.Command(bin, "mesh", "up", "--lab", name, "--name", "t-ctrlc")
		var errb bytes.Buffer
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Interrupt it while the agents start.
		for i := 0; i < 200 && len(meshAgents(bin, name)) < 3; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		c.Process.Signal(os.Interrupt)
		err := c.Wait()
		if err == nil {
			t.Fatalf("mesh up interrupted exited 0\n%s", errb.String())
		}
		if a := meshAgents(bin, name); len(a) > 0 {
			t.Fatalf("agents left after Ctrl-C of mesh up: %v\n%s", a, errb.String())
		}
		if code, _, stderr := cli(t, bin, "mesh", "status", "--name", "t-ctrlc"); code != 2 || !strings.Contains(stderr, "no mesh t-ctrlc is up") {
			t.Errorf("status after an interrupted up: exit %d %q", code, stderr)
		}
	})

	code, out, stderr := cli(t, bin, "mesh", "up", "--lab", name)
	if code != 0 || !strings.Contains(out, "Mesh t-mesh8 is up: 8 agents probing 56 pairs") {
		t.Fatalf("mesh up: exit %d\n%s%s", code, out, stderr)
	}
	up := time.Now()
	agents := meshAgents(bin, name)
	if len(agents) != 8 {
		t.Fatalf("%d agents running, want 8", len(agents))
	}
	if code, _, stderr := cli(t, bin, "mesh", "up", "--lab", name); code != 2 || !strings.Contains(stderr, "is up already") {
		t.Errorf("a second mesh up: exit %d %q", code, stderr)
	}

	// Each agent's cost over 30 s and its memory, read from /proc.
	before := map[int]int64{}
	for _, pid := range agents {
		before[pid], _ = cpuTicks(pid)
	}
	start := time.Now()
	time.Sleep(30 * time.Second)
	for _, pid := range agents {
		after, ok := cpuTicks(pid)
		if !ok {
			t.Fatalf("agent %d is gone", pid)
		}
		pct := float64(after-before[pid]) / time.Since(start).Seconds() // ticks are 1/100 s: % of a CPU
		mb, ok := rssMB(pid)
		if !ok {
			t.Fatalf("agent %d: no VmRSS in /proc/%d/status", pid, pid)
		}
		t.Logf("agent %d: %.2f%% of a CPU, %.1f MB resident", pid, pct, mb)
		if pct > 1 {
			t.Errorf("agent %d used %.2f%% of a CPU probing 7 peers, more than 1%%", pid, pct)
		}
		if mb > 30 {
			t.Errorf("agent %d holds %.1f MB probing 7 peers, more than 30 MB", pid, mb)
		}
	}

	time.Sleep(time.Until(up.Add(45 * time.Second)))
	code, d := meshStatusDoc(t, bin, name, sch)
	if code != 0 || len(d.Hosts) != 8 || len(d.Pairs) != 56 || len(d.Suspects) != 0 {
		t.Fatalf("45 s after up: exit %d, %d hosts, %d pairs, suspects %q: %s", code, len(d.Hosts), len(d.Pairs), suspectsOf(d), d.Verdict)
	}
	for _, p := range d.Pairs {
		if p.State != mesh.OK || p.RTTUS == nil || p.Loss == nil || p.Probes == 0 {
			t.Errorf("%s → %s: %s %s (rtt %v, loss %v)", p.Src, p.Dst, p.State, p.Why, p.RTTUS, p.Loss)
		}
	}
	for _, h := range d.Hosts {
		if !h.Up || h.Evidence == nil || h.AgentCPUPct == nil || h.AgentRSSBytes == nil || *h.AgentRSSBytes > 30e6 {
			t.Errorf("host %+v", h)
		}
	}

	t.Run("5% egress loss", func(t *testing.T) {
		nft := exec.Command("ip", "netns", "exec", "lr-"+name+"-h03", "nft", "-f", "-")
		nft.Stdin = strings.NewReader(`table inet t-mesh-loss {
  chain out {
    type filter hook output priority 0;
    oifname "lab0" numgen random mod 100 < 5 drop
  }
}
`)
		if out, err := nft.CombinedOutput(); err != nil {
			t.Fatalf("planting loss: %v\n%s", err, out)
		}
		planted := time.Now()
		t.Cleanup(func() {
			exec.Command("ip", "netns", "exec", "lr-"+name+"-h03", "nft", "delete", "table", "inet", "t-mesh-loss").Run()
		})
		var seen time.Duration
		for time.Since(planted) < 90*time.Second {
			time.Sleep(2 * time.Second)
			code, d := meshStatusDoc(t, bin, name, sch)
			got := suspectsOf(d)
			switch {
			case len(got) == 0:
				continue
			case !slices.Equal(got, []string{"host h03 send"}):
				t.Fatalf("%.0f s after the loss: suspects %q, want h03's send side only\n%s", time.Since(planted).Seconds(), got, d.Verdict)
			case code != 1:
				t.Errorf("status with a suspect: exit %d, want 1", code)
			}
			if seen == 0 {
				seen = time.Since(planted)
				t.Logf("h03 suspected on its send side %.0f s after the loss began: %s", seen.Seconds(), strings.Join(d.Suspects[0].Evidence, " | "))
			}
			if time.Since(planted) > seen+10*time.Second {
				break // and it held
			}
		}
		if seen == 0 {
			t.Fatal("h03's 5% egress loss not suspected within 90 s")
		}
	})

	t.Run("an agent dies", func(t *testing.T) {
		var victim int
		for _, pid := range agents {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(b), "198.18.0.5\x00") {
				victim = pid
			}
		}
		if victim == 0 {
			t.Fatal("no agent of h05")
		}
		syscall.Kill(victim, syscall.SIGKILL)
		deadline := time.Now().Add(40 * time.Second)
		for {
			time.Sleep(2 * time.Second)
			_, d := meshStatusDoc(t, bin, name, sch)
			var h05 mesh.HostStatus
			for _, h := range d.Hosts {
				if h.Name == "h05" {
					h05 = h
				}
			}
			down := 0
			for _, p := range d.Pairs {
				if (p.Src == "h05" || p.Dst == "h05") && p.State == mesh.Down {
					down++
				}
			}
			named := slices.Contains(suspectsOf(d), "host h05 both")
			if !h05.Up && strings.Contains(h05.Error, "exited") && down == 14 && named {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("40 s after h05's agent was killed: h05 %+v, %d of its 14 pairs down, suspects %q", h05, down, suspectsOf(d))
			}
		}
	})

	// Ctrl-C of mesh down: the supervisor stops every agent all the same.
	down := exec.Command(bin, "mesh", "down", "--name", name)
	if err := down.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	down.Process.Signal(os.Interrupt)
	down.Wait()
	for deadline := time.Now().Add(30 * time.Second); len(meshAgents(bin, name)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agents left 30 s after an interrupted mesh down: %v", meshAgents(bin, name))
		}
	}
	if code, _, _ := cli(t, bin, "mesh", "status", "--name", name); code != 2 {
		t.Errorf("status after down: exit %d, want 2", code)
	}

	// The same mesh through the real launchers: ssh to an sshd in every
	// host (the controller in the lab's switch, the binary copied to the
	// hosts), and srun inside a real Slurm allocation.
	t.Run("ssh", func(t *testing.T) {
		ssh := launchtest.StartSSHD(t, name, members)
		hosts := filepath.Join(t.TempDir(), "hosts.txt")
		var b strings.Builder
		for _, m := range members {
			fmt.Fprintf(&b, "%s %s %s\n", m.Host, m.Address, m.Host) // the ssh_config's aliases
		}
		if err := os.WriteFile(hosts, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(mustRead(t, bin))
		home, _ := os.UserHomeDir()
		installed := filepath.Join(home, launch.DefaultRemoteDir, "linerate-"+hex.EncodeToString(sum[:])[:16])
		t.Cleanup(func() { os.Remove(installed) })
		inSwitch := func(args ...string) (int, string) {
			t.Helper()
			c := exec.Command(bin, args...)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := lab.Start(name, lab.Switch, c); err != nil {
				t.Fatal(err)
			}
			err := c.Wait()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), out.String()
			}
			return 0, out.String()
		}
		if code, out := inSwitch("mesh", "up", "--hosts", hosts, "--ssh-config", ssh.Config, "--name", "t-mssh"); code != 0 || !strings.Contains(out, "8 agents probing 56 pairs") {
			t.Fatalf("mesh up --hosts: exit %d\n%s", code, out)
		}
		if a := meshAgents(installed, "--mesh-peers"); len(a) != 8 {
			t.Errorf("%d agents from the copied binary, want 8", len(a))
		}
		time.Sleep(15 * time.Second)
		code, out := inSwitch("mesh", "status", "--name", "t-mssh", "--json")
		var d mesh.Doc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("mesh status: exit %d: %v\n%s", code, err, out)
		}
		checkAllOK(t, &d)
		if code, out := inSwitch("mesh", "down", "--name", "t-mssh"); code != 0 {
			t.Fatalf("mesh down: exit %d\n%s", code, out)
		}
		if a := meshAgents(installed, "--mesh-peers"); len(a) > 0 {
			t.Errorf("agents left after mesh down: %v", a)
		}
	})

	t.Run("slurm", func(t *testing.T) {
		slurm := launchtest.StartSlurm(t, name, members)
		out := filepath.Join(t.TempDir(), "status.json")
		// A mesh lives in its allocation: up, status and down in one.
		script := fmt.Sprintf("%[1]s mesh up --slurm --name t-slurm && sleep 15 && %[1]s mesh status --name t-slurm --json > %[2]s; %[1]s mesh down --name t-slurm", bin, out)
		c := slurm.Command("salloc", "-N", "8", "--", "sh", "-c", script)
		var log bytes.Buffer
		c.Stdout, c.Stderr = &log, &log
		if err := slurm.Start(c); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("salloc: %v\n%s", err, log.String())
			}
		case <-time.After(3 * time.Minute):
			c.Process.Kill()
			t.Fatalf("salloc ran for 3 minutes\n%s", log.String())
		}
		var d mesh.Doc
		if err := json.Unmarshal(mustRead(t, out), &d); err != nil {
			t.Fatalf("mesh status in the allocation: %v\n%s", err, log.String())
		}
		checkAllOK(t, &d)
		if d.Source != "slurm" {
			t.Errorf("source %q", d.Source)
		}
		if a := meshAgents(bin, "--mesh-peers"); len(a) > 0 {
			t.Errorf("agents left after the allocation: %v", a)
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAllOK: 8 hosts up, every one of the 56 pairs ok with its figures,
// nothing suspected.
func checkAllOK(t *testing.T, d *mesh.Doc) {
	t.Helper()
	if len(d.Hosts) != 8 || len(d.Pairs) != 56 || len(d.Suspects) != 0 {
		t.Fatalf("%d hosts, %d pairs, suspects %q: %s", len(d.Hosts), len(d.Pairs), suspectsOf(d), d.Verdict)
	}
	for _, p := range d.Pairs {
		if p.State != mesh.OK || p.RTTUS == nil {
			t.Errorf("%s → %s: %s %s", p.Src, p.Dst, p.State, p.Why)
		}
	}
}
