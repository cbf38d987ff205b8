package agent

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// TestAgentRefuses checks that the agent turns away each kind of bad
// client with its reason in the log, without crashing, and serves a good
// client afterwards.
func TestAgentRefuses(t *testing.T) {
	addr, logs := agent(t, &Server{MaxDuration: 2 * time.Second})
	// Each kind of refusal is logged in full once per source address and
	// window (then summarised): each raw client comes from an address of
	// its own.
	raw := func(t *testing.T, src string, b []byte) {
		t.Helper()
		c := dialFrom(t, src, addr)
		defer c.Close()
		c.Write(b)
	}
	t.Run("wrong token", func(t *testing.T) {
		_, err := Run(context.Background(), Config{Peer: addr, Token: otherToken, Test: Test{Params: engine.Params{Duration: time.Second}}})
		if !errors.Is(err, ErrAuth) {
			t.Errorf("err = %v, want ErrAuth", err)
		}
		waitLog(t, logs, "refused connection", "wrong MAC")
	})
	t.Run("replayed handshake", func(t *testing.T) {
		frames := recordHandshake(t, addr)
		c := dialFrom(t, "127.0.0.2", addr)
		defer c.Close()
		c.Write(frames[0])
		readFrame(c, maxFrame) // a fresh challenge
		c.Write(frames[1])
		waitLog(t, logs, "refused connection", "replayed handshake")
	})
	t.Run("unknown test", func(t *testing.T) {
		key, id := make([]byte, keySize), make([]byte, testIDSize)
		rand.Read(key)
		rand.Read(id)
		raw(t, "127.0.0.3", preamble(key, id, 0))
		waitLog(t, logs, "refused connection", "unknown test or wrong proof")
	})
	t.Run("oversized frame", func(t *testing.T) {
		raw(t, "127.0.0.4", binary.BigEndian.AppendUint32(nil, maxHandshakeFrame+1))
		waitLog(t, logs, "refused connection", "frame larger than allowed")
	})
	t.Run("truncated frame", func(t *testing.T) {
		raw(t, "127.0.0.5", append(binary.BigEndian.AppendUint32(nil, 100), `{"type":"hel`...))
		waitLog(t, logs, "refused connection", "truncated frame")
	})
	t.Run("duration over the bound", func(t *testing.T) {
		_, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 5 * time.Second}}})
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Busy || !strings.Contains(pe.Reason, "over this agent's limit") {
			t.Errorf("err = %v, want a refusal naming the limit", err)
		}
		waitLog(t, logs, "refused test", "over this agent's limit of 2s")
	})
	t.Run("second client", func(t *testing.T) {
		started := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			var once bool
			_, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Progress: func(e result.Event) {
				if e.Event == "interval" && !once {
					once = true
					close(started)
				}
			}, Test: Test{Params: engine.Params{Duration: time.Second, Interval: 100 * time.Millisecond}}})
			first <- err
		}()
		select {
		case <-started:
		case err := <-first:
			t.Fatalf("first client: %v", err)
		}
		_, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: time.Second}}})
		var pe *PeerError
		if !errors.As(err, &pe) || !pe.Busy {
			t.Errorf("second client: %v, want busy", err)
		}
		waitLog(t, logs, "refused connection", "busy")
		if err := <-first; err != nil {
			t.Errorf("first client: %v", err)
		}
	})
	t.Run("client killed mid-test", func(t *testing.T) {
		killClient(t, addr)
		waitLog(t, logs, "test aborted", "went away mid-test")
	})
	// After all that, the agent still serves.
	for _, dir := range []result.Direction{result.Send, result.Receive} {
		res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: time.Second, Direction: dir}}})
		if err != nil {
			t.Fatalf("a good client after the refusals: %v", err)
		}
		checkEnd(t, res)
	}
}

// recordHandshake authenticates once and returns the client's two frames
// (hello, auth) as they crossed the wire.
func recordHandshake(t *testing.T, addr string) [][]byte {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rec := &recorder{Conn: nc, c: nc}
	c := newConn(rec)
	if _, _, err := clientHandshake(c, testToken); err != nil {
		t.Fatal(err)
	}
	return rec.frames
}

// killClient starts a client process in reverse mode (the agent sends),
// and kills it with SIGKILL once its first interval is in.
func killClient(t *testing.T, addr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], addr, "2")
	cmd.Env = append(os.Environ(), helperEnv+"=client", TokenEnv+"="+string(testToken), "DIRECTION=receive")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "started\n" {
		cmd.Process.Kill()
		t.Fatalf("client helper: %q %v", line, err)
	}
	cmd.Process.Kill()
}
