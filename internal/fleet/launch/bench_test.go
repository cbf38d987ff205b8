package launch

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet/launch/launchtest"
	"github.com/linerate/linerate/internal/lab"
)

// What starting and stopping one agent costs with each launcher, in a lab
// of 3 hosts (root, under the lab lock):
//
//	flock /tmp/linerate-lab.lock go test -run '^$' -bench . -benchtime 20x ./internal/fleet/launch
//
// One op: start the agent stand-in on h02 (ssh from the switch, an srun
// step, or the local sh in the host), wait until it says it runs, stop it.

func benchAgent(b *testing.B, start func() (*Process, error)) {
	b.Helper()
	var up, down time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := start()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.WaitLine(context.Background(), "ready "); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if ex := p.Stop(context.Background()); ex.Code != 143 {
			b.Fatalf("stop: %+v", ex)
		}
		up, down = up+t1.Sub(t0), down+time.Since(t1)
	}
	b.ReportMetric(float64(up.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(down.Milliseconds())/float64(b.N), "stop-ms/op")
}

func BenchmarkSSHAgent(b *testing.B) {
	const name = "b-ssh"
	members := launchtest.Lab(b, name, 3)
	c := launchtest.StartSSHD(b, name, members)
	l := &SSH{Options: []string{"-F", c.Config}, Dir: b.TempDir(),
		StartCmd: func(cmd *exec.Cmd) error { return lab.Start(name, lab.Switch, cmd) }}
	self, _ := os.Executable()
	bin, _, err := l.Install(context.Background(), "h02", self)
	if err != nil {
		b.Fatal(err)
	}
	argv := []string{bin, helperArg, "agent", "--token-file", TokenFile}
	benchAgent(b, func() (*Process, error) { return l.Start(context.Background(), "h02", argv, []byte("bench-token")) })
}

func BenchmarkSlurmAgent(b *testing.B) {
	const name = "b-slurm"
	members := launchtest.Lab(b, name, 3)
	c := launchtest.StartSlurm(b, name, members)
	out, err := c.Output("salloc", "--no-shell", "-N", "3")
	if err != nil {
		// salloc --no-shell reports the grant on stderr; Output keeps
		// stdout only, so ask squeue.
		b.Log(out, err)
	}
	q, err := c.Output("squeue", "-h", "-o", "%i")
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(q)
	if !regexp.MustCompile(`^[0-9]+$`).MatchString(id) {
		b.Fatalf("no allocation: squeue %q", q)
	}
	defer c.Output("scancel", id)
	s := &Slurm{Env: append(c.Env(), "SLURM_JOB_ID="+id, "SLURM_JOB_NODELIST=h[01-03]"), Dir: b.TempDir(), StartCmd: c.Start}
	self, _ := os.Executable()
	argv := []string{self, helperArg, "agent", "--token-file", TokenFile}
	benchAgent(b, func() (*Process, error) { return s.Start(context.Background(), "h02", argv, []byte("bench-token")) })
}

func BenchmarkLabAgent(b *testing.B) {
	const name = "b-lab"
	launchtest.Lab(b, name, 3)
	l := &Lab{Name: name}
	defer l.Close()
	self, _ := os.Executable()
	argv := []string{self, helperArg, "agent", "--token-file", TokenFile}
	benchAgent(b, func() (*Process, error) { return l.Start(context.Background(), "h02", argv, []byte("bench-token")) })
}
