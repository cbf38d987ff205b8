package agent

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
)

// TestStalledTestGivesWay: a client that stops mid-test where the agent
// cannot see it go (here SIGSTOP: its connections stay open, nothing
// moves) holds the agent only until a new client comes after yieldAfter
// of silence: the agent ends the stalled test, logs why, and runs the
// new client's test, long before the stalled test's 30 s were up.
func TestStalledTestGivesWay(t *testing.T) {
	addr, logs := agent(t, &Server{})
	cmd := exec.Command(os.Args[0], addr, "30")
	cmd.Env = append(os.Environ(), helperEnv+"=client", TokenEnv+"="+string(testToken))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("client helper: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	busy := 0
	for {
		res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond}}})
		var pe *PeerError
		if errors.As(err, &pe) && pe.Busy && time.Since(stopped) < 20*time.Second {
			busy++
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if err != nil || res.End.SumReceived.Bytes == 0 {
			t.Fatalf("the second client, %.1f s after the first stopped: %v", time.Since(stopped).Seconds(), err)
		}
		break
	}
	took := time.Since(stopped)
	t.Logf("the second client ran %.1f s after the first stopped (%d busy answers before)", took.Seconds(), busy)
	if !strings.Contains(logs.String(), "took over from a stalled test") || !strings.Contains(logs.String(), "it gave way") {
		t.Errorf("the agent's log does not say it gave way:\n%s", logs.String())
	}
}
