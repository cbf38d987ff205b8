package launch

import (
	"bufio"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed wrapper.sh
var wrapperSource string

// wrapper is the wrapper script without its comments, as it goes on the
// remote command line.
var wrapper = func() string {
	var b strings.Builder
	for _, l := range strings.Split(wrapperSource, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}()

// TokenFile stands for the token file's path in a command's arguments:
// the launcher replaces it with the file it made.
const TokenFile = "{token-file}"

// controlPrefix starts the wrapper's own lines on standard error.
const controlPrefix = "linerate-launch: "

// Bounds: how much of a command's output a Process keeps, and how long a
// stop waits beyond the wrapper's own 5 s grace before it gives up.
const (
	maxKept       = 64 << 10
	stopMargin    = 10 * time.Second
	wrapperGrace  = 5 * time.Second
	maxTokenBytes = 4096
)

// Exit is how a command on a host ended.
type Exit struct {
	// Code is its exit status, 128+N after signal N; -1 when the wrapper
	// never said (the connection to the host was lost).
	Code int
	// Err says why the launcher itself failed, if it did.
	Err error
}

// Process is a command started on a host.
type Process struct {
	// Host names the host, for messages.
	Host string
	// PID is the command's process ID on its host.
	PID int

	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	stdout  []string      // lines, the newest last, at most maxKept bytes
	stderr  []string      // likewise, without the wrapper's lines
	changed chan struct{} // closed and replaced at every new line
	code    int
	pidc    chan int
	done    chan struct{}
	exit    Exit
}

// newToken checks a token: one line of text, as the wrapper reads it.
func checkToken(token []byte) error {
	if len(token) == 0 || len(token) > maxTokenBytes {
		return fmt.Errorf("token of %d bytes: want 1 to %d", len(token), maxTokenBytes)
	}
	for _, c := range token {
		if c < ' ' || c > '~' {
			return errors.New("the token must be one line of printable ASCII")
		}
	}
	return nil
}

// tokenPath is a new file name in dir for a token.
func tokenPath(dir string) (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("naming the token file: %w", err)
	}
	return strings.TrimSuffix(dir, "/") + "/token-" + hex.EncodeToString(b[:]), nil
}

// withToken replaces TokenFile in argv.
func withToken(argv []string, path string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, TokenFile, path)
	}
	return out
}

// start runs cmd (ssh or srun running the wrapper), gives it the token and
// waits until the wrapper says the command runs, or fails.
func start(ctx context.Context, host string, cmd *exec.Cmd, startCmd func(*exec.Cmd) error, token []byte) (*Process, error) {
	p := &Process{Host: host, cmd: cmd, changed: make(chan struct{}), pidc: make(chan int, 1), done: make(chan struct{}), code: -1}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if startCmd == nil {
		startCmd = (*exec.Cmd).Start
	}
	if err := startCmd(cmd); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", host, cmd.Path, err)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.read(stdout, false) }()
	go func() { defer readers.Done(); p.read(stderr, true) }()
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		werr := cmd.Wait()
		p.mu.Lock()
		p.exit = Exit{Code: p.code}
		if p.code < 0 {
			p.exit.Err = fmt.Errorf("%s: the connection ended before the command did (%v): %s", host, werr, p.tailLocked())
		}
		p.mu.Unlock()
		close(p.done)
	}()
	// The token goes through the pipe, never on a command line.
	if _, err := p.stdin.Write(append(append([]byte{}, token...), '\n')); err != nil {
		p.kill()
		return nil, fmt.Errorf("%s: giving the token: %w", host, err)
	}
	select {
	case p.PID = <-p.pidc:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s: the command did not start: %s", host, p.Tail())
	case <-ctx.Done():
		// Close the wrapper's input first: if it has started the
		// command already, that is what stops it; killing the wrapper
		// alone would leave the command holding the output pipes, and
		// kill waiting for them.
		p.stdin.Close()
		p.kill()
		return nil, fmt.Errorf("%s: starting: %w", host, context.Cause(ctx))
	}
}

// read collects one stream's lines; on standard error it takes the
// wrapper's own lines out.
func (p *Process) read(r io.Reader, isStderr bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxKept)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if rest, ok := strings.CutPrefix(line, controlPrefix); ok && isStderr {
			p.control(rest)
		} else if isStderr {
			p.stderr = keep(p.stderr, line)
		} else {
			p.stdout = keep(p.stdout, line)
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line past maxKept: drop the rest
}

// control reads a line of the wrapper's; the caller holds mu.
func (p *Process) control(line string) {
	switch f := strings.Fields(line); {
	case len(f) == 2 && f[0] == "pid":
		if pid, err := strconv.Atoi(f[1]); err == nil {
			select {
			case p.pidc <- pid:
			default:
			}
		}
	case len(f) == 2 && f[0] == "exit":
		if c, err := strconv.Atoi(f[1]); err == nil {
			p.code = c
		}
	default:
		p.stderr = keep(p.stderr, line)
	}
}

// keep appends line, dropping the oldest lines beyond maxKept bytes.
func keep(lines []string, line string) []string {
	lines = append(lines, line)
	n := 0
	for i := len(lines) - 1; i >= 0; i-- {
		n += len(lines[i]) + 1
		if n > maxKept {
			return append(lines[:0], lines[i+1:]...)
		}
	}
	return lines
}

// WaitLine waits until the command prints a line starting with prefix on
// its standard output and returns it. It fails when the command ends
// first, with what it printed on standard error.
func (p *Process) WaitLine(ctx context.Context, prefix string) (string, error) {
	seen := 0
	for {
		p.mu.Lock()
		lines, changed := p.stdout, p.changed
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if strings.HasPrefix(lines[seen], prefix) {
				return lines[seen], nil
			}
		}
		select {
		case <-changed:
		case <-p.done:
			p.mu.Lock()
			more := len(p.stdout) > seen
			p.mu.Unlock()
			if !more {
				return "", fmt.Errorf("%s: the command ended (%s) before printing %q: %s", p.Host, p.exitText(), prefix, p.Tail())
			}
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for %q: %w", p.Host, prefix, context.Cause(ctx))
		}
	}
}

// Stdout returns the command's standard output so far (its last 64 KiB).
func (p *Process) Stdout() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stdout...)
}

// Tail returns the end of the command's standard error, one line, for
// messages.
func (p *Process) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tailLocked()
}

func (p *Process) tailLocked() string {
	lines := p.stderr
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "(no output)"
	}
	return s
}

// Done is closed when the command has ended and the launcher knows how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit says how the command ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	<-p.done
	return p.exit
}

func (p *Process) exitText() string {
	select {
	case <-p.done:
	default:
		return "still running"
	}
	if p.exit.Code < 0 {
		return "connection lost"
	}
	return "exit status " + strconv.Itoa(p.exit.Code)
}

// Stop stops the command: it closes the wrapper's standard input, which
// kills the command (SIGTERM, SIGKILL 5 s later), and waits until it is
// gone. If ctx ends first, or the wrapper does not answer within its grace
// and a margin, it kills the local ssh or srun, which has the same effect
// on the host once the connection drops. Stopping twice is fine.
func (p *Process) Stop(ctx context.Context) Exit {
	p.stdin.Close()
	t := time.NewTimer(wrapperGrace + stopMargin)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
	case <-ctx.Done():
		p.kill()
	}
	return p.Exit()
}

// kill ends the local ssh or srun and waits for the reaper.
func (p *Process) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	<-p.done
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
