package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
)

// LabEngine says how to run the native engine across a lab: the agent
// (`linerate serve --once`) in host b, the client (`linerate bench`) in
// host a, each a process of its own in its host's namespaces, as on two
// machines. Name "" means not in a lab.
type LabEngine struct {
	Name string // the lab, as `linerate lab up --name` made it
	// Self is the linerate binary to run in the hosts; "" means
	// /proc/self/exe, this very binary.
	Self string
	// Port is the agent's port; 0 means agent.DefaultPort.
	Port int
	// Stderr receives both processes' diagnostics; nil keeps them only
	// for error messages.
	Stderr io.Writer
}

// RunInLab runs cfg between hosts a (client) and b (agent) of a lab, with
// a fresh token, and returns the client's result. cfg.Peer and cfg.Token
// are ignored; Progress sees the client's events as they happen.
func RunInLab(ctx context.Context, lr LabEngine, cfg agent.Config) (*result.Result, error) {
	if err := lab.ValidateName(lr.Name); err != nil {
		return nil, err
	}
	if lr.Self == "" {
		lr.Self = "/proc/self/exe"
	}
	if lr.Port == 0 {
		lr.Port = agent.DefaultPort
	}
	dir, err := os.MkdirTemp("", "linerate-lab-token-")
	if err != nil {
		return nil, fmt.Errorf("making a token directory: %w", err)
	}
	defer os.RemoveAll(dir)
	tokenFile := filepath.Join(dir, "token")
	tok, err := agent.GenerateToken()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(tokenFile, tok, 0o600); err != nil {
		return nil, fmt.Errorf("writing the token: %w", err)
	}
	var agentErr syncBuffer
	ap, err := startLabAgent(ctx, lr, cfg, tokenFile, &agentErr)
	if err != nil {
		return nil, err
	}
	res, err := runLabClient(ctx, lr, cfg, tok)
	// The agent exits after its one test; after a failed one it may not
	// know yet (its client's path went away where it cannot see), and
	// the run must end now, not when the agent finds out.
	grace := 2 * time.Second
	if err != nil {
		grace = 1500 * time.Millisecond
	}
	ap.stop(grace)
	// A run cut short says why itself; the agent's last word is for a
	// client that got nowhere.
	if err != nil && res == nil && agentErr.String() != "" {
		err = fmt.Errorf("%w (agent in %s said: %s)", err, lab.Namespace(lr.Name, lab.B), finalLine(agentErr.String()))
	}
	return res, err
}

// agentProc is the agent running in host b.
type agentProc struct {
	cmd  *exec.Cmd
	done chan error
}

// startLabAgent starts `linerate serve --once` in host b and waits until
// it listens.
func startLabAgent(ctx context.Context, lr LabEngine, cfg agent.Config, tokenFile string, errBuf *syncBuffer) (*agentProc, error) {
	maxDur := max(agent.DefaultMaxDuration, cfg.Duration+time.Second, cfg.Omit+time.Second)
	cmd := exec.CommandContext(ctx, lr.Self, "serve", "--once", "--bind", lab.AddrB, "--port", strconv.Itoa(lr.Port),
		"--token-file", tokenFile, "--max-duration", maxDur.String())
	cmd.Stderr = teeTo(errBuf, lr.Stderr)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := lab.Start(lr.Name, lab.B, cmd); err != nil {
		return nil, err
	}
	a := &agentProc{cmd: cmd, done: make(chan error, 1)}
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if !ok && strings.HasPrefix(sc.Text(), agent.ListeningPrefix) {
				ok = true
				listening <- true
			}
		}
		if !ok {
			listening <- false
		}
		a.done <- cmd.Wait()
	}()
	select {
	case ok := <-listening:
		if ok {
			return a, nil
		}
		err := <-a.done
		return nil, fmt.Errorf("the agent in %s did not start: %v: %s", lab.Namespace(lr.Name, lab.B), err, finalLine(errBuf.String()))
	case <-time.After(10 * time.Second):
		a.stop(0)
		return nil, fmt.Errorf("the agent in %s did not listen within 10 s", lab.Namespace(lr.Name, lab.B))
	}
}

// stop waits up to grace for the agent (it exits after its one test),
// then ends it.
func (a *agentProc) stop(grace time.Duration) {
	select {
	case <-a.done:
		return
	case <-time.After(grace):
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.done
}

// LabClientFlag is the hidden flag of `linerate bench ADDR` that makes the
// process the client of a lab run (RunLabClient). The lab starts this very
// binary in host a with it: the test travels as a document on stdin, not
// as flags written back, so what the parent asked is what the client runs.
const LabClientFlag = "lab-client"

// runLabClient starts `linerate bench ADDR --lab-client` in host a, writes
// the test to its stdin, and turns the events it prints back into a
// Result.
func runLabClient(ctx context.Context, lr LabEngine, cfg agent.Config, tok []byte) (*result.Result, error) {
	// The caller stores the result (or not): the client in host a keeps
	// nothing, gathers no doctor report and summarises nothing.
	test, err := json.Marshal(Params{Test: cfg.Test})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, lr.Self, "bench", lab.AddrB+":"+strconv.Itoa(lr.Port), "--"+LabClientFlag)
	cmd.Env = append(os.Environ(), agent.TokenEnv+"="+string(tok))
	cmd.Stdin = bytes.NewReader(test)
	var errBuf syncBuffer
	cmd.Stderr = teeTo(&errBuf, lr.Stderr)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := lab.Start(lr.Name, lab.A, cmd); err != nil {
		return nil, err
	}
	res, perr := readEvents(out, cfg.Progress)
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	switch {
	case perr != nil:
		return res, perr
	case werr != nil:
		msg := finalLine(errBuf.String())
		return nil, fmt.Errorf("the client in %s failed: %v: %s", lab.Namespace(lr.Name, lab.A), werr, strings.TrimPrefix(msg, "linerate: "))
	case res == nil:
		return nil, fmt.Errorf("the client in %s ended without its run's end event", lab.Namespace(lr.Name, lab.A))
	}
	if res == nil { // never a run without its end, nor a nil run without an error
		return nil, fmt.Errorf("the client in %s ended without its end event", lab.Namespace(lr.Name, lab.A))
	}
	return res, nil
}

// maxLabTest bounds the test document a lab client reads.
const maxLabTest = 1 << 20

// RunLabClient is the client of a lab run, in host a (LabClientFlag): it
// reads the test from in (a Params document), runs it against the agent at
// peer with token, and writes each event to out as one JSON line, as
// --json-stream does. A run cut short ends with its end and an "error"
// event; a run that never started with the "error" event alone.
func RunLabClient(ctx context.Context, peer string, in io.Reader, out io.Writer, token []byte) error {
	var p Params
	if err := json.NewDecoder(io.LimitReader(in, maxLabTest)).Decode(&p); err != nil {
		return fmt.Errorf("reading the lab client's test on stdin: %w", err)
	}
	enc := json.NewEncoder(out)
	res, err := agent.Run(ctx, agent.Config{Peer: peer, Token: token, Test: p.Test, Progress: JSONStreamProgress(out)})
	writeLabEnd(enc, res, err)
	return err
}

// writeLabEnd writes a lab client's last events: the engine's end, which
// JSONStreamProgress leaves to its caller and the lab's caller reads and
// then analyses, and the error of a run that failed.
func writeLabEnd(enc *json.Encoder, res *result.Result, err error) {
	if res != nil {
		_ = enc.Encode(result.Event{Event: "end", Data: &res.End})
	}
	if err != nil {
		_ = enc.Encode(result.Event{Event: "error", Data: err.Error()})
	}
}

// readEvents assembles a Result from --json-stream lines.
func readEvents(r io.Reader, progress func(result.Event)) (*result.Result, error) {
	res := &result.Result{Schema: result.Schema, Engine: "native", Intervals: []result.Interval{}}
	dec := json.NewDecoder(r)
	sawStart, sawEnd := false, false
	for {
		var raw struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) && sawEnd {
				return res, nil
			}
			if errors.Is(err, io.EOF) {
				return nil, nil // the client failed: its exit status says why
			}
			return nil, fmt.Errorf("reading the client's events: %w", err)
		}
		ev, err := decodeEvent(res, raw.Event, raw.Data)
		if err != nil {
			if raw.Event == "error" && sawStart {
				// The run started and was cut short: keep what it measured.
				res.Error = err.Error()
				return res, err
			}
			return nil, err
		}
		sawStart = sawStart || raw.Event == "start"
		sawEnd = sawEnd || raw.Event == "end"
		if progress != nil && ev.Data != nil {
			progress(ev)
		}
	}
}

func decodeEvent(res *result.Result, kind string, data json.RawMessage) (result.Event, error) {
	var target any
	switch kind {
	case "start":
		target = &res.Start
	case "interval":
		res.Intervals = append(res.Intervals, result.Interval{})
		target = &res.Intervals[len(res.Intervals)-1]
	case "end":
		target = &res.End
	case "error":
		// The client's own one-line error, passed on as it is: it already
		// says what failed, and a prefix here would say it twice.
		var msg string
		if err := json.Unmarshal(data, &msg); err != nil || msg == "" {
			return result.Event{}, errors.New("the client failed without saying why")
		}
		return result.Event{}, errors.New(msg)
	default:
		return result.Event{}, nil // a newer client's event
	}
	if err := json.Unmarshal(data, target); err != nil {
		return result.Event{}, fmt.Errorf("the client's %s event: %w", kind, err)
	}
	if kind == "start" {
		res.RunID = res.Start.Timestamp.UnixMilli()
	}
	return result.Event{Event: kind, Data: target}, nil
}

func teeTo(buf io.Writer, w io.Writer) io.Writer {
	if w == nil {
		return buf
	}
	return io.MultiWriter(buf, w)
}

// finalLine is the last line of a process's diagnostics.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// syncBuffer is what a lab process writes to its stderr, readable while
// it writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
