package toolserver

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Proc is a server process this process started.
type Proc struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	// endsItself: the server exits by itself when its client is done,
	// so Stop waits a moment before interrupting it.
	endsItself bool
}

// launch starts argv through run, which starts the command,
// says on started whether that worked, and if it did waits for it to end
// (run goes on a goroutine of its own: the thread that forks a child may
// have to last as long as the child).
func launch(argv []string, run func(cmd *exec.Cmd, started chan<- error)) (*Proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	s := &Proc{cmd: cmd, out: out, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(s.done)
		run(cmd, started)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s on the server: %w", argv[0], err)
	}
	return s, nil
}

// Stop waits a moment for a server that ends by itself, then interrupts
// it, then kills it.
func (s *Proc) Stop() (float64, string, error) {
	steps := []struct {
		sig  os.Signal
		wait time.Duration
	}{{nil, time.Second}, {os.Interrupt, time.Second}, {os.Kill, 5 * time.Second}}
	if !s.endsItself {
		steps = steps[1:]
	}
	for _, step := range steps {
		if step.sig != nil {
			s.cmd.Process.Signal(step.sig)
		}
		select {
		case <-s.done:
			return ProcessCPU(s.cmd), s.out.String(), nil
		case <-time.After(step.wait):
		}
	}
	return 0, s.out.String(), fmt.Errorf("%s did not exit after SIGKILL", s.cmd.Path)
}

// serverOutputMax bounds what is kept of a tool server's output: its last
// 64 KiB. A server anyone can reach (iperf -s takes no token) could
// otherwise fill the agent's memory by printing.
const serverOutputMax = 64 << 10

// tailBuffer keeps the last serverOutputMax bytes a process writes,
// safe to read while it writes.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *tailBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if len(p) >= serverOutputMax {
		p = p[len(p)-serverOutputMax:]
		l.b = l.b[:0]
	}
	if over := len(l.b) + len(p) - serverOutputMax; over > 0 {
		l.b = append(l.b[:0], l.b[over:]...)
	}
	l.b = append(l.b, p...)
	return n, nil
}

func (l *tailBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// ProcessCPU returns the CPU seconds an ended process used.
func ProcessCPU(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}
