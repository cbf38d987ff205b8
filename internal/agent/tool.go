package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/rdmastats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// A tool session lets bench's external drivers (iperf3, iperf2,
// perftest) use the agent too: the client asks for a tool server, the
// agent starts it — bound to the address the client reached the agent on,
// from an allowlist the ToolStarter keeps, never a command line, with
// credentials only this client holds — and samples its own host every
// interval, as it does in a native test, until the client's stop. So the
// user starts one thing per host, and every driver's runs carry both
// ends' per-CPU telemetry.
//
//	client → tool{server, duration_ms, interval_ms}
//	agent  → tool_started{argv, auth} | busy | error
//	agent  → interval{cpu, total} every interval
//	client → stop
//	agent  → tool_end{cpu_seconds, output}
//
// The credentials come from the session: both ends derive the same
// secret from the session's keys (ToolRequest.Secret, ToolSession.Secret),
// so no password crosses the wire; what else the client needs (iperf3's
// RSA public key) comes in tool_started, under the frame's MAC.
//
// A session is bounded like a test: its duration by the agent's
// MaxDuration, and a client that does not stop within the duration and
// toolGrace loses its tool server.

// ToolStarter starts external tool servers for the agent's clients.
type ToolStarter interface {
	// StartTool checks the request against its allowlist and starts the
	// server, listening on the agent's own address, with credentials
	// derived from the request's secret.
	StartTool(req ToolRequest) (ToolProc, ToolStart, error)
}

// ToolRequest is a client's request for a tool server, as the agent
// hands it to its ToolStarter.
type ToolRequest struct {
	// Spec is the client's description of the server (bench's
	// ToolServer, as JSON): untrusted, at most 4 KiB.
	Spec json.RawMessage
	// Bind is the address the client reached the agent on: the only one
	// the server may listen on.
	Bind netip.Addr
	// Secret is 32 bytes only this session's two ends know: the server's
	// one-time credentials come from it.
	Secret []byte
	// Length is how long the client will use the server.
	Length time.Duration
}

// ToolStart is a tool server as it started.
type ToolStart struct {
	// Argv is its command line.
	Argv []string
	// Auth is what the client needs to use it besides the secret (a
	// public key), at most 16 KiB; nil when nothing.
	Auth json.RawMessage
	// RDMA says the server uses an RDMA device (perftest): the agent
	// reads that port's counters before the client can connect and after
	// the server ends, and returns their growth (ToolSession.RDMA).
	RDMA bool
	// RDMADevice is the device the server was asked for; "" is the
	// ACTIVE port of the interface the client reached the agent by, else
	// the first ACTIVE port, as perftest picks the first device.
	RDMADevice string
}

// ToolProc is a tool server the agent started.
type ToolProc interface {
	// Stop ends the server (it may have ended by itself) and returns the
	// CPU seconds it used and what it printed.
	Stop() (cpuSeconds float64, output string, err error)
}

// toolGrace is how long after a session's length the agent keeps its
// tool server for a client that has not stopped it: enough for a
// client's last report, short enough that nobody else gets the server.
const toolGrace = 5 * time.Second

// runTool serves a tool session: start the tool server, sample until the
// client stops, stop the server, report.
func (ss *session) runTool(ctx context.Context, body []byte) bool {
	var m toolMsg
	if err := decodeAs(msgTool, body, msgTool, &m); err != nil {
		ss.refuse(err)
		return false
	}
	if err := m.check(ss.srv.maxDuration()); err != nil {
		ss.refuse(err)
		return false
	}
	if ss.srv.Tools == nil {
		ss.refuse(errors.New("this agent does not start tool servers (it runs native tests only)"))
		return false
	}
	d := time.Duration(m.DurationMS) * time.Millisecond
	req := ToolRequest{Spec: m.Server, Bind: engine.AddrPort(ss.ctrl.c.LocalAddr()).Addr().Unmap(), Secret: ss.keys.tool, Length: d}
	proc, st, err := ss.srv.Tools.StartTool(req)
	if err != nil {
		ss.refuse(err)
		return false
	}
	if len(st.Auth) > maxToolAuth {
		proc.Stop()
		ss.refuse(fmt.Errorf("the tool server's credentials are %d bytes, over the %d the protocol carries", len(st.Auth), maxToolAuth))
		return false
	}
	ss.log.Info("tool started", "argv", fmt.Sprint(st.Argv))
	// Before the client's tool can connect.
	iface := ss.counterIface()
	nic := nicstats.Begin(iface)
	var rdma *rdmastats.Span
	if st.RDMA {
		rdma = rdmastats.Begin(ss.srv.fs(), st.RDMADevice, iface)
	}
	smp := telemetry.NewSampler(ss.srv.fs(), ss.host.NICIRQs)
	serr := ss.ctrl.send(toolStartedMsg{Type: msgToolStarted, Argv: st.Argv, Auth: st.Auth}, handshakeTimeout)
	if serr == nil {
		serr = ss.toolIntervals(ctx, smp, time.Duration(m.IntervalMS)*time.Millisecond, time.Now().Add(d+toolGrace))
	}
	cpu, out, perr := proc.Stop()
	if serr != nil {
		ss.free()
		ss.log.Warn("tool session aborted", "reason", serr.Error())
		// Tell a client still listening why (one past its deadline).
		ss.ctrl.send(errorMsg{Type: msgError, Reason: "tool session ended: " + serr.Error()}, time.Second)
		return true
	}
	if len(out) > maxToolOutput {
		out = out[len(out)-maxToolOutput:]
	}
	end := toolEndMsg{Type: msgToolEnd, CPUSeconds: result.Round3(cpu), Output: out, NICCounters: nic.End()}
	if rdma != nil {
		end.RDMA = rdma.End()
		if len(end.RDMA.NotRead) > maxErrorText {
			end.RDMA.NotRead = end.RDMA.NotRead[:maxErrorText]
		}
	}
	if perr != nil {
		end.Error = perr.Error()
	}
	ss.free()
	if err := ss.ctrl.send(end, handshakeTimeout); err != nil {
		ss.log.Warn("tool session: sending the end", "reason", err.Error())
	}
	ss.log.Info("tool done", "cpu_seconds", end.CPUSeconds)
	return true
}

// toolIntervals sends a sample of this host every interval until the
// client's stop (nil), or an error: the client gone, the deadline passed,
// the agent shutting down.
func (ss *session) toolIntervals(ctx context.Context, smp *telemetry.Sampler, every time.Duration, deadline time.Time) error {
	stopc := ss.awaitStop(deadline)
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent is shutting down: %w", context.Cause(ctx))
		case err := <-stopc:
			return err
		case <-t.C:
			s := smp.Sample()
			msg := toolSample{Type: msgInterval, Index: i, CPU: s.PerCPU, Total: s.Total}
			if err := ss.ctrl.send(msg, handshakeTimeout); err != nil {
				return fmt.Errorf("sending interval %d: %w", i, err)
			}
		}
	}
}

// ToolConfig is a tool session as the client asks for it.
type ToolConfig struct {
	// Peer is the agent: "host", "host:port", "[v6addr]:port".
	Peer string
	// Token authenticates both ends to each other.
	Token []byte
	// Server describes the tool server (bench's ToolServer, as JSON).
	Server json.RawMessage
	// Duration is how long the client will use the server; the agent
	// stops it toolGrace (5 s) after that at the latest.
	Duration time.Duration
	// Interval is the agent's sampling period; 0 means 1 s.
	Interval time.Duration
}

// ToolSession is a tool server running on the agent's host for this
// client, with the agent's per-interval telemetry.
type ToolSession struct {
	ctrl    *conn
	nc      net.Conn
	unwatch func() bool // stops closing nc when ctx is done
	host    result.HostInfo
	argv    []string
	auth    json.RawMessage
	secret  []byte

	mu      sync.Mutex
	samples []telemetry.Sample
	end     *toolEndMsg
	err     error
	done    chan struct{}
}

// StartTool asks the agent at cfg.Peer for a tool server and returns once
// it runs. Cancelling ctx closes the session (the agent then stops the
// tool).
func StartTool(ctx context.Context, cfg ToolConfig) (*ToolSession, error) {
	if err := clientToken(cfg.Token); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	addr := WithPort(cfg.Peer, DefaultPort)
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the agent at %s: %w (is 'linerate serve' running there?)", addr, err)
	}
	ts := &ToolSession{ctrl: newConn(nc), nc: nc, done: make(chan struct{})}
	// Cancelling ctx closes the session at any point, setup included.
	ts.unwatch = context.AfterFunc(ctx, func() { nc.Close() })
	host, keys, err := clientHandshake(ts.ctrl, cfg.Token)
	if err == nil {
		ts.host, ts.secret = *host, keys.tool
		err = ts.ctrl.send(toolMsg{Type: msgTool, Server: cfg.Server, DurationMS: cfg.Duration.Milliseconds(),
			IntervalMS: cfg.Interval.Milliseconds()}, handshakeTimeout)
	}
	if err == nil {
		var st *toolStartedMsg
		if st, err = expect(ts.ctrl, msgToolStarted, setupTimeout, (*toolStartedMsg).check); err == nil {
			ts.argv, ts.auth = st.Argv, st.Auth
		}
	}
	if err != nil {
		ts.unwatch()
		nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting the tool server on the agent: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("starting the tool server on the agent: %w", err)
	}
	limit := cfg.Duration + toolGrace + setupTimeout
	go ts.read(limit, toolSamples(limit, cfg.Interval))
	return ts, nil
}

// toolSamples is how many samples a session read for limit, sampled every
// interval, can hold: the agent samples until the session's deadline, so
// more is an agent that breaks the protocol, and is not kept.
func toolSamples(limit, interval time.Duration) int {
	return int(min(int64(limit/max(interval, MinInterval))+2, maxIntervals+2))
}

// read collects the agent's samples until its tool_end, at most most of
// them.
func (ts *ToolSession) read(limit time.Duration, most int) {
	defer close(ts.done)
	deadline := time.Now().Add(limit)
	for {
		typ, body, err := ts.ctrl.recv(time.Until(deadline))
		if err != nil {
			ts.finish(nil, fmt.Errorf("reading the agent: %w", err))
			return
		}
		if typ == msgInterval {
			s, err := decode(typ, body, msgInterval, (*toolSample).check)
			if err != nil {
				ts.finish(nil, err)
				return
			}
			ts.mu.Lock()
			full := len(ts.samples) >= most
			if !full {
				ts.samples = append(ts.samples, telemetry.Sample{PerCPU: s.CPU, Total: s.Total})
			}
			ts.mu.Unlock()
			if full {
				ts.finish(nil, fmt.Errorf("%w: more than the %d samples the session can have", errBadMessage, most))
				return
			}
			continue
		}
		ts.finish(decode(typ, body, msgToolEnd, (*toolEndMsg).check))
		return
	}
}

func (ts *ToolSession) finish(end *toolEndMsg, err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.end, ts.err = end, err
}

// Host is what the agent said about its host.
func (ts *ToolSession) Host() result.HostInfo { return ts.host }

// Argv is the tool server's command line on the agent.
func (ts *ToolSession) Argv() []string { return ts.argv }

// Auth is what the agent sent besides the secret for using its tool
// server (ToolStart.Auth); nil when nothing.
func (ts *ToolSession) Auth() json.RawMessage { return ts.auth }

// Secret is the session's tool secret, as the agent's ToolStarter got it
// (ToolRequest.Secret): the server's credentials come from it.
func (ts *ToolSession) Secret() []byte { return ts.secret }

// Samples returns the agent's samples so far, one per interval.
func (ts *ToolSession) Samples() []telemetry.Sample {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]telemetry.Sample(nil), ts.samples...)
}

// NICCounters is how the agent's NIC counters grew while its tool server
// ran, as its tool_end said; nil before Stop, or when it did not say.
func (ts *ToolSession) NICCounters() *result.NICDelta {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.end == nil {
		return nil
	}
	return ts.end.NICCounters
}

// RDMA is how the RDMA counters of the agent's end grew while its tool
// server ran, as its tool_end said; nil before Stop, for a tool that is
// not RDMA's, or from an agent that did not say.
func (ts *ToolSession) RDMA() *result.RDMAEnd {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.end == nil {
		return nil
	}
	return ts.end.RDMA
}

// Stop tells the agent to stop the tool server and waits for its report:
// the server's CPU seconds and the tail of its output.
func (ts *ToolSession) Stop() (float64, string, error) {
	defer ts.nc.Close()
	defer ts.unwatch()
	if err := ts.ctrl.send(bareMsg{Type: msgStop}, handshakeTimeout); err != nil {
		return 0, "", fmt.Errorf("stopping the tool server on the agent: %w", err)
	}
	select {
	case <-ts.done:
	case <-time.After(setupTimeout):
		return 0, "", errors.New("the agent did not report the end of its tool server within 15 s")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case ts.err != nil:
		return 0, "", ts.err
	case ts.end.Error != "":
		return ts.end.CPUSeconds, ts.end.Output, fmt.Errorf("the tool server on the agent: %s", ts.end.Error)
	}
	return ts.end.CPUSeconds, ts.end.Output, nil
}
