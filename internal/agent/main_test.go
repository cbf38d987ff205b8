package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
)

// helperEnv makes the test binary act as a client or an agent when a test
// runs it as a subprocess: to kill a client mid-test, or to run both ends
// in the namespaces of a lab.
const helperEnv = "LINERATE_ENGINE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper runs "client ADDR SECONDS" (printing the result as JSON, and
// "started" once the first interval is in), "serve ADDR" (one test, then
// exit; with ONCE=0 until SIGTERM) or "hostile ADDR" (hostile.go). The
// token comes from LINERATE_TOKEN.
func helper(mode string, args []string) int {
	tok := []byte(os.Getenv(TokenEnv))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	switch mode {
	case "client":
		var secs float64
		fmt.Sscan(args[1], &secs)
		once := false
		res, err := Run(ctx, Config{Peer: args[0], Token: tok, Progress: func(e result.Event) {
			if e.Event == "interval" && !once {
				once = true
				fmt.Println("started")
			}
		}, Test: Test{Params: engine.Params{Duration: time.Duration(secs * float64(time.Second)), Interval: 100 * time.Millisecond, Direction: result.Direction(os.Getenv("DIRECTION"))}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return 0
	case "serve":
		ln, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(ListeningPrefix + ln.Addr().String())
		srv := &Server{Token: tok, Once: os.Getenv("ONCE") != "0", Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
		if v := os.Getenv("RELAY_PEERS"); v != "" {
			peers, err := ParseRelayPeers(v)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			srv.RelayPeers = peers
		}
		if err := srv.Serve(ctx, ln); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "hostile":
		return hostile(ctx, args[0])
	case "meshpeers":
		return meshPeers(ctx, args)
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 3
}

// needRoot skips a test without root, except in CI, where skipping would
// hide that the namespace tests never ran.
func needRoot(t *testing.T) {
	t.Helper()
	testbin.NeedRoot(t, "network namespaces")
}

// agent runs a Server on loopback for one test and returns its address and
// its log.
func agent(t *testing.T, srv *Server) (string, *testutil.Buffer) {
	t.Helper()
	logs := &testutil.Buffer{}
	srv.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if srv.Token == nil {
		srv.Token = testToken
	}
	if srv.RelayPeers == nil {
		// Test agents relay to each other over loopback, each on a port
		// of its own; relay_policy_test.go holds them to the real rules.
		srv.RelayPeers = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		srv.LoopbackFleet, srv.relayAnyPort = true, true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	return ln.Addr().String(), logs
}

// waitLog waits until the agent's log has a line containing all of want.
func waitLog(t *testing.T, logs *testutil.Buffer, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if containsAll(line, want) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("no agent log line with %q; log:\n%s", want, logs.String())
}

func containsAll(s string, subs []string) bool {
	for _, w := range subs {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// dialFrom connects to addr from the loopback address src (any of
// 127.0.0.0/8), so that the agent sees a source of its own.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
