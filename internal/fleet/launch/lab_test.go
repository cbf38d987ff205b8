package launch

// The launchers for real, in a lab of many hosts: sshd in every host, or
// a Slurm cluster (munged, slurmctld, a slurmd per host). Run under the
// lab lock: flock /tmp/linerate-lab.lock go test ./internal/fleet/launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet/launch/launchtest"
	"github.com/linerate/linerate/internal/lab"
	"golang.org/x/sys/unix"
)

func randomToken(t *testing.T) []byte {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return []byte(hex.EncodeToString(b[:]))
}

// inNetNS reports whether process pid runs in host h of lab name.
func inNetNS(t *testing.T, name string, h lab.Host, pid int) bool {
	want, err := lab.NetNSInode(name, h)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return st.Ino == want
}

// TestSSHLauncherInLab: with sshd in each of 4 lab hosts and ssh run from
// the switch with a generated ssh_config, the launcher copies the binary
// once (the hosts share a file system) and finds it after, starts it on
// every host with its token in a private file, and stops it; an agent
// whose controller dies is killed too.
func TestSSHLauncherInLab(t *testing.T) {
	const name = "t-ssh"
	members := launchtest.Lab(t, name, 4)
	c := launchtest.StartSSHD(t, name, members)
	remote := filepath.Join(t.TempDir(), "remote")
	l := &SSH{Options: []string{"-F", c.Config}, Dir: remote,
		StartCmd: func(cmd *exec.Cmd) error { return lab.Start(name, lab.Switch, cmd) }}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var bin string
	for i, m := range members {
		path, copied, err := l.Install(ctx, string(m.Host), self)
		if err != nil {
			t.Fatal(err)
		}
		if copied != (i == 0) || !strings.HasPrefix(path, remote+"/linerate-") {
			t.Errorf("%s: Install = %s, copied %v", m.Host, path, copied)
		}
		bin = path
	}
	a, _ := os.ReadFile(self)
	b, _ := os.ReadFile(bin)
	if !bytes.Equal(a, b) {
		t.Fatal("the installed binary differs from the local one")
	}
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("installed binary mode %v, %v", st.Mode(), err)
	}

	argv := []string{bin, helperArg, "agent", "--token-file", TokenFile}
	var procs []*Process
	tokens := map[string]string{}
	for _, m := range members {
		tok := randomToken(t)
		tokens[string(m.Host)] = string(tok)
		p, err := l.Start(ctx, string(m.Host), argv, tok)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for i, p := range procs {
		m := members[i]
		line, err := p.WaitLine(ctx, "ready ")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("ready host=%s token=%s mode=600 pid=%d", m.Namespace, tokens[string(m.Host)], p.PID)
		if line != want {
			t.Errorf("%s said %q, want %q", m.Host, line, want)
		}
		if !inNetNS(t, name, m.Host, p.PID) {
			t.Errorf("%s: pid %d is not in the host's network namespace", m.Host, p.PID)
		}
	}
	for i, p := range procs {
		ex := p.Stop(ctx)
		if ex.Code != 143 || ex.Err != nil || !strings.Contains(strings.Join(p.Stdout(), "\n"), "got SIGTERM") {
			t.Errorf("%s: stop: %+v, stdout %q", members[i].Host, ex, p.Stdout())
		}
		if alive(p.PID) {
			t.Errorf("%s: pid %d runs after Stop", members[i].Host, p.PID)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(remote, "token-*")); len(ents) != 0 {
		t.Errorf("token files left: %v", ents)
	}

	// The controller dies (its ssh is killed): the agent goes too.
	p, err := l.Start(ctx, "h02", argv, randomToken(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLine(ctx, "ready "); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for alive(p.PID) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(p.PID) {
		t.Errorf("the agent (pid %d) outlived its controller", p.PID)
	}
	if ex := p.Exit(); ex.Err == nil {
		t.Errorf("a killed ssh reported a clean exit: %+v", ex)
	}

	// A host that does not exist: one clear error.
	if _, err := l.Start(ctx, "h09", argv, randomToken(t)); err == nil || !strings.Contains(err.Error(), "h09") {
		t.Errorf("start on an unknown host: %v", err)
	}
}

// TestSlurmLauncherInLab: a real allocation of the 4 lab hosts (salloc -N 4,
// from the switch) runs a controller that reads its nodes and addresses
// from the allocation and starts one agent per node with srun; each agent
// runs in its own host with its token, and each is stopped.
func TestSlurmLauncherInLab(t *testing.T) {
	const name = "t-slurm"
	members := launchtest.Lab(t, name, 4)
	c := launchtest.StartSlurm(t, name, members)
	dir := filepath.Join(c.Dir, "tokens")
	cmd := c.Command("salloc", "-N", "4", "--", os.Args[0], helperArg, "slurm-controller")
	cmd.Env = append(cmd.Env, "LAUNCH_TEST_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := c.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("salloc: %v: %s %s", err, out.String(), errb.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("salloc did not finish: %s %s", out.String(), errb.String())
	}
	var rep controllerReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Error != "" {
		t.Fatalf("controller: %v %q: %s", err, rep.Error, errb.String())
	}
	if len(rep.Nodes) != len(members) {
		t.Fatalf("nodes %+v", rep.Nodes)
	}
	for i, m := range members {
		n := rep.Nodes[i]
		if n.Name != string(m.Host) || n.Addr != m.Address || n.Hostname != m.Namespace {
			t.Errorf("node %d: %+v, want %s at %s", i, n, m.Host, m.Address)
		}
		want := fmt.Sprintf("ready host=%s token=token-for-%s mode=600 pid=%d", m.Namespace, m.Host, rep.PIDs[n.Name])
		if rep.Ready[n.Name] != want {
			t.Errorf("%s said %q, want %q", n.Name, rep.Ready[n.Name], want)
		}
		if rep.Exits[n.Name] != 143 || !strings.Contains(rep.Stdout[n.Name], "got SIGTERM") {
			t.Errorf("%s: exit %d, stdout %q", n.Name, rep.Exits[n.Name], rep.Stdout[n.Name])
		}
		if alive(rep.PIDs[n.Name]) {
			t.Errorf("%s: pid %d runs after the allocation", n.Name, rep.PIDs[n.Name])
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "token-*")); len(ents) != 0 {
		t.Errorf("token files left: %v", ents)
	}
	// What ParseNodes reads, from this real cluster: with -update the
	// capture in testdata is refreshed (see testdata/README).
	nodes, err := c.Output("scontrol", "show", "node", "-o", "h[01-04]")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseNodes(nodes)
	if err != nil || len(parsed) != 4 || parsed["h03"].Addr != "198.18.0.3" {
		t.Errorf("ParseNodes of the live cluster: %+v, %v", parsed, err)
	}
	if *update {
		if err := os.WriteFile("testdata/scontrol-show-node.txt", []byte(nodes), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The example batch script is one Slurm accepts.
	script, err := filepath.Abs("../../../deploy/slurm/linerate-fleet.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Output("sbatch", "--test-only", script); err != nil {
		t.Errorf("sbatch --test-only %s: %v %s", script, err, out)
	}
	sbcastBlock(t, c, script)
}

// sbcastBlock runs the batch script's broadcast block (LINERATE_SBCAST=1)
// in an allocation of the cluster: every node gets the binary in a private
// directory of a name nobody can guess, checked against its SHA-256, and
// the directory goes when the job ends.
func sbcastBlock(t *testing.T, c *launchtest.SlurmCluster, script string) {
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, "# --- broadcast ---"), strings.Index(text, "# --- end of broadcast ---")
	if i < 0 || j < i {
		t.Fatalf("%s has no broadcast block", script)
	}
	bin := filepath.Join(c.Dir, "linerate-stand-in")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho stand-in\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "set -u\nLINERATE=" + bin + "\nLINERATE_SBCAST=1\n" + text[i:j] +
		"each sh -c 'echo \"$(stat -c \"%a %u %F\" \"$(dirname \"$1\")\") $(\"$1\")\"' sh \"$LINERATE\"\necho \"dir=$dir\"\n"
	cmd := c.Command("salloc", "-N", "4", "--", "bash", "-c", body)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := c.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the broadcast block: %v: %s %s", err, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "700 0 directory stand-in\n"); n != 4 {
		t.Errorf("%d of 4 nodes ran the private copy: %s %s", n, out.String(), errb.String())
	}
	dir := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "dir=/tmp/linerate-"); ok {
			dir = "/tmp/linerate-" + v
		}
	}
	if dir == "" || len(dir) < len("/tmp/linerate-1-")+16 {
		t.Fatalf("the broadcast directory %q has no random part: %s", dir, out.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after the job: %v", dir, err)
	}
}

// TestLabLauncher: the lab launcher starts the agent stand-in in each host
// of a lab, in the host's own namespaces with its token, and stops it.
func TestLabLauncher(t *testing.T) {
	const name = "t-lablnch"
	members := launchtest.Lab(t, name, 3)
	l := &Lab{Name: name}
	defer l.Close()
	self, _ := os.Executable()
	var procs []*Process
	for _, m := range members {
		p, err := l.Start(t.Context(), m.Host, []string{self, helperArg, "agent", "--token-file", TokenFile}, []byte("tok-"+string(m.Host)))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	for i, p := range procs {
		m := members[i]
		line, err := p.WaitLine(t.Context(), "ready ")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("ready host=%s token=tok-%s mode=600 pid=%d", m.Namespace, m.Host, p.PID); line != want {
			t.Errorf("%q, want %q", line, want)
		}
		if !inNetNS(t, name, m.Host, p.PID) {
			t.Errorf("%s: not in the host's network namespace", m.Host)
		}
		if ex := p.Stop(t.Context()); ex.Code != 143 || alive(p.PID) {
			t.Errorf("%s: stop %+v", m.Host, ex)
		}
	}
	dir := l.Dir
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the token directory %s is left", dir)
	}
}
