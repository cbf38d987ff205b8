package agent

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// A probe is a test of one data connection that is not a TCP stream: a
// ping-pong (bench --latency, TCP or UDP; the agent echoes) or a UDP
// stream at a target rate (bench --udp; the client sends, the agent
// counts). Its messages:
//
//	type           sender  when                   bounds checked by the reader
//	probe          client  a probe test           probeMsg.validate: kind, size, rate, milliseconds, CPU
//	probe_accept   agent   after probe            probeAcceptMsg.check: port, test ID, CPU
//	probe_ready    agent   data connection in     none (type only)
//	start, stop    client  the test's clock       none (type only)
//	interval       agent   every interval         toolSample.check (the tool sessions' sample)
//	probe_end      agent   after stop             probeEndMsg.check: error size, counts, NIC counters
//
// The data connection proves itself with the preamble of data.go: over
// TCP on the agent's port like a stream's; over UDP as the first
// datagram to the port the accept names (the client repeats it until the
// agent says probe_ready), from the client's own address only. The
// agent's echo and receiver ignore a datagram of any other size than the
// test's, so a repeated preamble is harmless.
const (
	msgProbe       = "probe"
	msgProbeAccept = "probe_accept"
	msgProbeReady  = "probe_ready"
	msgProbeEnd    = "probe_end"
)

func init() {
	for _, t := range []string{msgProbe, msgProbeAccept, msgProbeReady, msgProbeEnd} {
		messageTypes[t] = true
	}
}

// Probe kinds.
const (
	ProbePingPong = "pingpong"
	ProbeUDP      = "udp"
)

// Bounds of a probe request.
const (
	// MaxPingRate is the most round trips per second asked for: more
	// than any path answers (a round trip takes microseconds).
	MaxPingRate = 10_000_000
	// MaxUDPRate is the highest UDP target, bits per second: 1.6 Tbit/s.
	MaxUDPRate = 1.6e12
	// maxCooldown bounds the ping-pong's cool-down.
	maxCooldown = 10 * time.Second
	// probeTimeout is how long a UDP request waits for its reply before
	// it counts as dropped; probeStall how long without any reply ends
	// the run (the peer stopped answering).
	probeTimeout = 100 * time.Millisecond
	probeStall   = 2 * time.Second
	// preambleEvery is how often the client repeats the UDP preamble
	// until the agent has it.
	preambleEvery = 100 * time.Millisecond
)

// ProbeTest is a probe test as the client asks for it (Config.Probe).
type ProbeTest struct {
	Kind string // ProbePingPong or ProbeUDP
	UDP  bool   // ping-pong over UDP; else TCP with TCP_NODELAY
	// Size is the message bytes (ping-pong) or the datagram payload (UDP).
	Size int
	// Rate is round trips per second (ping-pong; 0: as fast as replies
	// come) or bits per second (UDP; 0: as fast as the socket takes).
	Rate float64
	// Cooldown is the ping-pong's time after the window, not counted.
	Cooldown time.Duration
	// Method is how the UDP sender sends ("" the engine's default).
	Method engine.UDPMethod
}

type probeMsg struct {
	Type       string  `json:"type"`
	Kind       string  `json:"kind"`
	UDP        bool    `json:"udp,omitempty"`
	Size       int     `json:"size"`
	Rate       float64 `json:"rate"`
	DurationMS int64   `json:"duration_ms"`
	OmitMS     int64   `json:"omit_ms"`
	CooldownMS int64   `json:"cooldown_ms"`
	IntervalMS int64   `json:"interval_ms"`
	ServerCPU  int     `json:"server_cpu"` // -1: the agent picks
}

// validate checks m against the bounds; maxDur is the agent's.
func (m probeMsg) validate(maxDur time.Duration) error {
	maxMS := maxDur.Milliseconds()
	switch {
	case m.Kind != ProbePingPong && m.Kind != ProbeUDP:
		return fmt.Errorf("probe kind %.20q: must be %s or %s", m.Kind, ProbePingPong, ProbeUDP)
	case m.Kind == ProbePingPong && (m.Size < engine.MinMessage || m.Size > engine.MaxMessage):
		return fmt.Errorf("message size %d: must be %d to %d bytes", m.Size, engine.MinMessage, engine.MaxMessage)
	case m.Kind == ProbeUDP && (m.Size < engine.MinDatagram || m.Size > engine.MaxDatagram):
		return fmt.Errorf("datagram length %d: must be %d to %d bytes", m.Size, engine.MinDatagram, engine.MaxDatagram)
	case math.IsNaN(m.Rate) || m.Rate < 0:
		return fmt.Errorf("rate %g: must be 0 or more", m.Rate)
	case m.Kind == ProbePingPong && m.Rate > MaxPingRate:
		return fmt.Errorf("rate %g round trips/s: at most %d", m.Rate, MaxPingRate)
	case m.Kind == ProbeUDP && m.Rate > MaxUDPRate:
		return fmt.Errorf("rate %g bit/s: at most %g", m.Rate, float64(MaxUDPRate))
	case m.DurationMS < minDuration.Milliseconds():
		return fmt.Errorf("duration %d ms: must be at least %s", m.DurationMS, minDuration)
	case m.DurationMS > maxMS:
		return fmt.Errorf("duration %s is over this agent's limit of %s (linerate serve --max-duration)", msText(m.DurationMS), maxDur)
	case m.OmitMS < 0 || m.OmitMS > maxMS:
		return fmt.Errorf("omit %d ms: must be 0 to %s", m.OmitMS, maxDur)
	case m.CooldownMS < 0 || m.CooldownMS > maxCooldown.Milliseconds():
		return fmt.Errorf("cool-down %d ms: must be 0 to %s", m.CooldownMS, maxCooldown)
	case m.IntervalMS < MinInterval.Milliseconds() || m.IntervalMS > MaxInterval.Milliseconds():
		return fmt.Errorf("interval %d ms: must be %s to %s", m.IntervalMS, MinInterval, MaxInterval)
	case (m.OmitMS+m.DurationMS+m.CooldownMS)/m.IntervalMS > maxIntervals:
		return fmt.Errorf("%s at %s intervals makes over %d reports: use a longer interval", msText(m.OmitMS+m.DurationMS), msText(m.IntervalMS), maxIntervals)
	case m.ServerCPU < -1 || m.ServerCPU >= maxCPUs:
		return fmt.Errorf("server CPU %d: out of range", m.ServerCPU)
	}
	return nil
}

func (m probeMsg) length() time.Duration {
	return time.Duration(m.OmitMS+m.DurationMS+m.CooldownMS) * time.Millisecond
}

type probeAcceptMsg struct {
	Type   string `json:"type"`
	Port   int    `json:"port"`
	TestID []byte `json:"test_id"`
	CPU    int    `json:"cpu"` // the agent's thread's CPU; -1 unpinned
}

func (m probeAcceptMsg) check() error {
	switch {
	case m.Port < 1 || m.Port > 65535:
		return fmt.Errorf("%w: probe_accept names port %d", errBadMessage, m.Port)
	case len(m.TestID) != testIDSize:
		return fmt.Errorf("%w: probe_accept's test ID of %d bytes", errBadMessage, len(m.TestID))
	case m.CPU < -1 || m.CPU >= maxCPUs:
		return fmt.Errorf("%w: probe_accept places the agent's thread on CPU %d", errBadMessage, m.CPU)
	}
	return nil
}

type probeEndMsg struct {
	Type string `json:"type"`
	// Echoed counts the messages the echo sent back (ping-pong).
	Echoed uint64 `json:"echoed"`
	// Warm and Measured are the UDP receiver's counts.
	Warm       engine.UDPStats `json:"warm"`
	Measured   engine.UDPStats `json:"measured"`
	CPUSeconds float64         `json:"cpu_seconds"`
	Error      string          `json:"error,omitempty"`
	// NICCounters is how the agent's NIC counters grew during the probe,
	// as in a stream test's end: a UDP receiver's loss is often its NIC's.
	NICCounters *result.NICDelta `json:"nic_counters,omitempty"`
	// ArrivalClock is the UDP receiver's clock of arrivals, the
	// jitter's (result.UDPSum.ArrivalClock); "" from an older agent.
	ArrivalClock string `json:"arrival_clock,omitempty"`
}

func (m probeEndMsg) check() error {
	if len(m.Error) > maxErrorText || m.CPUSeconds < 0 || math.IsNaN(m.Measured.JitterMS) || m.Measured.JitterMS < 0 {
		return fmt.Errorf("%w: probe_end with an error of %d bytes, %g CPU seconds, jitter %g", errBadMessage, len(m.Error), m.CPUSeconds, m.Measured.JitterMS)
	}
	switch m.ArrivalClock {
	case "", result.ArrivalKernel, result.ArrivalRead:
	default:
		return fmt.Errorf("%w: probe_end with an unknown arrival clock (%d bytes)", errBadMessage, len(m.ArrivalClock))
	}
	return checkNIC(m.NICCounters)
}

// runProbe serves a probe: accept, take the data connection, echo or
// count until the client stops, report.
func (ss *session) runProbe(ctx context.Context, body []byte) bool {
	m, err := decode(msgProbe, body, msgProbe, func(m *probeMsg) error { return m.validate(ss.srv.maxDuration()) })
	if err != nil {
		ss.refuse(err)
		return false
	}
	cpu := m.ServerCPU
	if cpu >= 0 && len(ss.host.CPUs) > 0 && !containsInt(ss.host.CPUs, cpu) {
		ss.refuse(fmt.Errorf("server CPU %d is not available to the agent", cpu))
		return false
	}
	if cpu < 0 {
		cpu = engine.Assign(1, ss.host.Candidates)[0]
	}
	ss.p = engine.Params{Streams: 1, Direction: result.Send, Duration: time.Duration(m.DurationMS) * time.Millisecond,
		Omit: time.Duration(m.OmitMS) * time.Millisecond, Interval: time.Duration(m.IntervalMS) * time.Millisecond}
	fd, err := ss.probeData(ctx, m, cpu)
	if err != nil {
		ss.free()
		ss.log.Warn("probe failed", "reason", err.Error())
		ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
		return false
	}
	defer engine.CloseFD(fd)
	ss.log.Info("probe started", "kind", m.Kind, "udp", m.UDP, "size", m.Size, "rate", m.Rate, "cpu", cpu)
	if err := ss.probeMeasure(ctx, m, fd, cpu); err != nil {
		ss.log.Warn("probe aborted", "reason", err.Error())
	}
	return true
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// probeData accepts the probe and returns its data socket (blocking),
// once the client has proved it.
func (ss *session) probeData(ctx context.Context, m *probeMsg, cpu int) (int, error) {
	testID, err := randomBytes(testIDSize)
	if err != nil {
		return -1, err
	}
	local := engine.AddrPort(ss.ctrl.c.LocalAddr())
	tcp := m.Kind == ProbePingPong && !m.UDP
	port := int(local.Port())
	var ufd = -1
	if !tcp {
		ufd, port, err = udpSocket(local.Addr())
		if err != nil {
			return -1, err
		}
	} else {
		ss.expectData(testID)
		defer ss.expectData(nil)
	}
	if err := ss.ctrl.send(probeAcceptMsg{Type: msgProbeAccept, Port: port, TestID: testID, CPU: cpu}, handshakeTimeout); err != nil {
		engine.CloseFD(ufd)
		return -1, fmt.Errorf("sending probe_accept: %w", err)
	}
	var fd int
	if tcp {
		streams, err := ss.collect(ctx, []int{cpu})
		if err != nil {
			engine.CloseStreams(streams)
			return -1, err
		}
		fd = streams[0].FD
	} else {
		remote := engine.AddrPort(ss.ctrl.c.RemoteAddr()).Addr()
		if err := ss.udpProof(ufd, testID, remote); err != nil {
			engine.CloseFD(ufd)
			return -1, err
		}
		fd = ufd
	}
	if err := ss.ctrl.send(bareMsg{Type: msgProbeReady}, handshakeTimeout); err != nil {
		engine.CloseFD(fd)
		return -1, fmt.Errorf("sending probe_ready: %w", err)
	}
	return fd, nil
}

// udpSocket opens a blocking UDP socket on addr, on a port of the
// kernel's choice.
func udpSocket(addr netip.Addr) (fd, port int, err error) {
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return -1, 0, fmt.Errorf("opening the probe's UDP socket: %w", err)
	}
	port = pc.LocalAddr().(*net.UDPAddr).Port
	fd, err = engine.Detach(pc)
	return fd, port, err
}

// udpProof waits for the client's preamble datagram on fd, from the
// client's address, and connects fd to where it came from. Anything else
// is dropped; the wait ends after setupTimeout.
func (ss *session) udpProof(fd int, testID []byte, client netip.Addr) error {
	tv := unix.NsecToTimeval(int64(preambleEvery))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("setting the probe socket's timeout: %w", err)
	}
	buf := make([]byte, dataPreambleLen+1)
	deadline := time.Now().Add(setupTimeout)
	for time.Now().Before(deadline) {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil || n != dataPreambleLen || from == nil {
			continue
		}
		src := sockaddrAddr(from)
		if src.Addr().Unmap() != client.Unmap() {
			continue // only the client of this session may send here
		}
		h, err := parsePreamble(buf[:n])
		if err != nil || h.index != 0 || !h.proves(ss.keys.data, testID) {
			continue
		}
		if err := unix.Connect(fd, from); err != nil {
			return fmt.Errorf("connecting the probe's UDP socket to %s: %w", src, err)
		}
		return nil
	}
	return fmt.Errorf("no proven datagram from %s within %s (a firewall dropping UDP?)", client, setupTimeout)
}

func sockaddrAddr(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// probeMeasure runs the agent's half until the client's stop, sending
// this host's telemetry every interval, then the end.
func (ss *session) probeMeasure(ctx context.Context, m *probeMsg, fd, cpu int) error {
	nic := nicstats.Begin(ss.counterIface()) // before the client's start and its first payload
	var start bareMsg
	if err := ss.ctrl.expect(msgStart, &start, setupTimeout); err != nil {
		ss.free()
		return fmt.Errorf("waiting for start: %w", err)
	}
	cpu0 := processCPU()
	var echo *engine.Echo
	var rx *engine.UDPReceiver
	var err error
	if m.Kind == ProbePingPong {
		echo, err = engine.NewEcho(fd, cpu, m.Size, m.UDP)
		if err == nil {
			echo.Start("lrs-echo")
		}
	} else {
		rx, err = engine.NewUDPReceiver(fd, cpu, m.Size)
		if err == nil {
			rx.Start("lrs-udp")
		}
	}
	if err != nil {
		ss.free()
		ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
		return err
	}
	smp := telemetry.NewSampler(ss.srv.fs(), ss.host.NICIRQs)
	var counts func() *udpCounts
	if rx != nil {
		counts = func() *udpCounts {
			warm, meas := rx.Stats()
			return &udpCounts{Warm: warm, Measured: meas}
		}
	}
	ierr := ss.probeIntervals(ctx, smp, counts, time.Now().Add(m.length()+endGrace))
	end := probeEndMsg{Type: msgProbeEnd}
	var werr error
	if echo != nil {
		echo.Halt()
		end.Echoed, werr = echo.Wait()
	} else {
		rx.Halt()
		werr = rx.Wait()
		end.Warm, end.Measured = rx.Stats()
		end.ArrivalClock = result.ArrivalRead
		if rx.KernelTimestamps() {
			end.ArrivalClock = result.ArrivalKernel
		}
	}
	end.CPUSeconds = result.Round3(max(0, processCPU()-cpu0))
	end.NICCounters = nic.End()
	if werr != nil {
		end.Error = werr.Error()
	}
	ss.free()
	if ierr != nil {
		ss.ctrl.send(errorMsg{Type: msgError, Reason: "probe ended: " + ierr.Error()}, time.Second)
		return ierr
	}
	if err := ss.ctrl.send(end, handshakeTimeout); err != nil {
		return fmt.Errorf("sending probe_end: %w", err)
	}
	ss.log.Info("probe done", "echoed", end.Echoed, "received", end.Measured.Packets)
	return nil
}

// processCPU is this process's CPU time so far (user + system), seconds.
func processCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// probeIntervals sends a sample of this host at each boundary of the
// test's schedule (the client samples on the same one, so that sample k
// of both ends covers the same span) until the client's stop; with
// udp, a UDP receiver's counts so far.
func (ss *session) probeIntervals(ctx context.Context, smp *telemetry.Sampler, udp func() *udpCounts, deadline time.Time) error {
	stopc := ss.awaitStop(deadline)
	bounds, _ := engine.Schedule(ss.p.Omit, ss.p.Duration, ss.p.Interval)
	t0 := time.Now()
	t := time.NewTimer(bounds[0])
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
			if udp != nil {
				msg.UDP = udp()
			}
			if err := ss.ctrl.send(msg, handshakeTimeout); err != nil {
				return fmt.Errorf("sending interval %d: %w", i, err)
			}
			if i+1 < len(bounds) {
				t.Reset(time.Until(t0.Add(bounds[i+1])))
			}
		}
	}
}
