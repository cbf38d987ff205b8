package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	mrand "math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/rdmastats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// FuzzRequest feeds the agent's request decoder and bounds arbitrary
// bodies: what passes validate must make an engine.Params within the
// engine's bounds, with no overflowed duration.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"type":"request","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"request","streams":129,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"request","streams":4,"duration_ms":1000,"omit_ms":9300000000000,"interval_ms":100,"direction":"bidir"}`,
		`{"type":"request","streams":1,"duration_ms":9223372036854775807,"interval_ms":1000,"direction":"receive"}`,
		`{"type":"request","streams":2,"duration_ms":500,"interval_ms":100,"direction":"send","server_cpus":[1099511627776,-1]}`,
		`{"type":"request","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"send","congestion":"bbr","zerocopy":"msg_zerocopy","window":4194304}`,
		`{"type":"request","streams":1000,"threads":2,"mode":"rr","size":1,"depth":8,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"request","streams":30000,"threads":200,"mode":"crr","size":-1,"depth":2,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"request","streams":100,"threads":2,"skip_rx_copy":"zerocopy_receive","no_tcp_info":true,"duration_ms":1000,"interval_ms":1000,"direction":"bidir"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, err := messageType(body)
		if err != nil {
			return
		}
		r, err := decode(typ, body, msgRequest, func(r *requestMsg) error { return r.validate(time.Hour) })
		if err != nil {
			return
		}
		p := r.params()
		if err := p.Check(); err != nil {
			t.Fatalf("passed validate, not the engine's check: %v", err)
		}
		switch {
		case p.Streams < 1 || p.Connections() > engine.MaxFlows:
			t.Fatalf("streams %d passed", p.Streams)
		case p.Threads < 0 || p.Threads > engine.MaxThreads || p.Size < 0 || p.Size > engine.MaxSize || p.Depth < 0 || p.Depth > engine.MaxDepth:
			t.Fatalf("threads %d, size %d, depth %d passed", p.Threads, p.Size, p.Depth)
		case p.Duration < minDuration || p.Duration > time.Hour || p.Omit < 0 || p.Omit > time.Hour:
			t.Fatalf("duration %s, omit %s passed", p.Duration, p.Omit)
		case p.Interval < MinInterval || p.Interval > MaxInterval:
			t.Fatalf("interval %s passed", p.Interval)
		case p.Window < 0:
			t.Fatalf("window %d passed", p.Window)
		}
		for _, c := range r.ServerCPUs {
			if c < 0 || c >= maxCPUs {
				t.Fatalf("server CPU %d passed", c)
			}
		}
		if b, _ := engine.Schedule(p.Omit, p.Duration, p.Interval); len(b) > maxIntervals+2 {
			t.Fatalf("%d intervals passed", len(b))
		}
	})
}

// FuzzToolRequest feeds the agent's tool request decoder and bounds.
func FuzzToolRequest(f *testing.F) {
	f.Add([]byte(`{"type":"tool","server":{"tool":"iperf3","port":5201},"duration_ms":10000,"interval_ms":1000}`))
	f.Add([]byte(`{"type":"tool","server":{},"duration_ms":-1,"interval_ms":1000}`))
	f.Add([]byte(`{"type":"tool","server":"x","duration_ms":9223372036854775807,"interval_ms":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, err := messageType(body)
		if err != nil {
			return
		}
		m, err := decode(typ, body, msgTool, func(m *toolMsg) error { return m.check(time.Hour) })
		if err != nil {
			return
		}
		if len(m.Server) == 0 || len(m.Server) > maxToolSpec || m.DurationMS > time.Hour.Milliseconds() || m.IntervalMS < 100 {
			t.Fatalf("tool request passed: %+v", m)
		}
	})
}

// FuzzClientMessages feeds every decoder of what a client reads from the
// agent (accept, ready, interval, end, the tool session's messages, the
// doctor report, error and busy): none may panic, and what passes its
// check is within bounds for a test of n connections.
func FuzzClientMessages(f *testing.F) {
	for _, s := range []string{
		`{"type":"accept","port":5301,"test_id":"AAAAAAAAAAAAAAAAAAAAAA==","placement":[0,1]}`,
		`{"type":"accept","port":70000,"test_id":"AA==","placement":[-2]}`,
		`{"type":"ready","window":{"sndbuf":425984,"rcvbuf":131072,"capped_by":["net.core.wmem_max=212992"]}}`,
		`{"type":"interval","index":0,"start":0,"end":1,"omitted":false,"streams":[{"id":1,"bytes":100},{"id":2,"bytes":5}],"cpu":{"0":{"busy":99}},"total":{}}`,
		`{"type":"interval","index":-1,"streams":null}`,
		`{"type":"end","streams":[{"id":1,"received":10},{"id":2,"sent":3,"sent_omit":1}],"cpu_seconds":1.5,"errors":["stream 1: x"]}`,
		`{"type":"end","streams":[],"cpu_seconds":-1}`,
		`{"type":"end","streams":[{"id":1},{"id":2}],"cpu_seconds":1,"nic_counters":{"interface":"lab0","driver":"veth","deltas":{"qdisc_drops":1234,"rx_dropped":0},"sources":{"qdisc_drops":{"qdisc.drops":1234},"rx_dropped":{"link.rx_dropped":0}}}}`,
		`{"type":"end","streams":[{"id":1},{"id":2}],"cpu_seconds":1,"nic_counters":{"interface":"eth0","not_read":"ENODEV"}}`,
		`{"type":"tool_started","argv":["iperf3","-s","-1"],"auth":{"rsa_public_key":"x"}}`,
		`{"type":"tool_end","cpu_seconds":0.25,"output":"done"}`,
		`{"type":"tool_end","cpu_seconds":0.25,"output":"done","nic_counters":{"interface":"enp1s0f0np0","driver":"mlx5_core","deltas":{"rx_no_buffer":1200000},"sources":{"rx_no_buffer":{"rx_out_of_buffer":1200000}}}}`,
		`{"type":"tool_end","cpu_seconds":0.25,"output":"done","rdma":{"device":"rocep51s0","port":1,"netdev":"enp51s0np0","hw_counters":{"np_cnp_sent":830,"out_of_sequence":0},"counters":{"port_xmit_data":0},"priority":{"3":{"tx_pause":4410,"rx_pause":0}}}}`,
		`{"type":"tool_end","cpu_seconds":0.25,"output":"done","rdma":{"not_read":"no RDMA port under /sys/class/infiniband"}}`,
		`{"type":"tool_end","cpu_seconds":0.25,"output":"done","rdma":{"device":"x","port":300,"priority":{"9":{"rx_pause":1},"":{}}}}`,
		`{"type":"doctor_report","report":{"schema":"linerate.doctor/v1"},"host":{}}`,
		`{"type":"doctor_report","report":"{"}`,
		`{"type":"accept","port":5301,"test_id":"AAAAAAAAAAAAAAAAAAAAAA==","placement":[1,1],"load":{"0":97.5,"1":2}}`,
		`{"type":"accept","port":5301,"test_id":"AAAAAAAAAAAAAAAAAAAAAA==","placement":[1,1],"load":{"x":1,"-1":200}}`,
		`{"type":"interval","index":0,"start":0,"end":1,"streams":[{"id":1,"bytes":100,"rx_cpu":3},{"id":2,"bytes":5,"rx_cpu":-7}],"cpu":{},"total":{}}`,
		`{"type":"end","streams":[{"id":1,"received":10,"measured":9},{"id":2}],"seconds":1.002,"foreign":{"pid":42,"seconds":1,"own":{"1":60},"cpu":{"0":96},"top":[{"pid":4123,"name":"stress-ng","cpu_pct":95,"cpu":0}]},"unread":{"proc/softirqs":"permission denied"}}`,
		`{"type":"end","streams":[{"id":1},{"id":2}],"seconds":1e300,"foreign":{"pid":-1,"top":[{"pid":1,"name":"x","cpu_pct":1e9,"cpu":99999999}]},"unread":{"etc/shadow":"x"},"foreign_note":"other load unknown"}`,
		`{"type":"error","reason":"authentication failed"}`,
		`{"type":"busy","reason":"a test from 198.18.0.1:40000 is running"}`,
		`{"type":"interval","index":1,"start":0,"end":1,"streams":[{"id":1,"bytes":100,"tcp":{"busy_us":1000000,"rwnd_limited_us":400000,"sndbuf_limited_us":100000,"delivery_rate_bps":2e10,"app_limited":false,"reord_seen":0,"lost":0,"retrans":3,"snd_cwnd":700,"snd_ssthresh":2147483647,"pacing_rate_bps":4e10}},{"id":2,"bytes":5,"rcv":{"rtt_us":40,"space":1000000,"wnd":65535,"ooopack":0},"transactions":9}],"cpu":{},"total":{},"transactions":{"count":9}}`,
		`{"type":"interval","index":1,"streams":[{"id":1,"tcp":{"busy_us":10,"rwnd_limited_us":20}},{"id":2,"tcp":{"busy_us":999999999999,"delivery_rate_bps":-1}}],"transactions":{"count":1,"samples":5,"rtt_us":{"p50":1}}}`,
		`{"type":"end","streams":[{"id":1,"transactions":100},{"id":2}],"cpu_seconds":1,"rx_method":"msg_trunc","rx_thread_cpu_seconds":0.5,"rx_mapped":0,"rx_copied":12}`,
		`{"type":"end","streams":[{"id":1},{"id":2}],"cpu_seconds":1,"rx_method":"dma","rx_thread_cpu_seconds":-2}`,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		conns := int(n%8) + 1
		typ, err := messageType(body)
		if err != nil {
			return
		}
		if m, err := decode(typ, body, msgAccept, func(m *acceptMsg) error { return m.check(conns) }); err == nil {
			if len(m.TestID) != testIDSize || len(m.Placement) != conns || m.Port < 1 || m.Port > 65535 || len(m.Load) > maxCPUMap {
				t.Fatalf("accept passed: %+v", m)
			}
		}
		decode(typ, body, msgReady, (*readyMsg).check)
		if m, err := decode(typ, body, msgInterval, func(m *intervalMsg) error { return m.check(conns) }); err == nil {
			if len(m.Streams) != conns || m.Index < 0 {
				t.Fatalf("interval passed: %+v", m)
			}
			for _, st := range m.Streams {
				if tcp := st.TCP; tcp != nil && (tcp.BusyUs > maxIntervalUs || tcp.RwndLimitedUs+tcp.SndbufLimitedUs > tcp.BusyUs || tcp.DeliveryRateBps < 0 || tcp.PacingRateBps > maxRateBps) {
					t.Fatalf("a tcp block passed: %+v", *tcp)
				}
			}
			if m.Transactions != nil && m.Transactions.RTT != nil {
				t.Fatal("latency from the agent passed")
			}
		}
		if m, err := decode(typ, body, msgEnd, func(m *endMsg) error { return m.check(conns) }); err == nil {
			if len(m.Streams) != conns || len(m.Errors) > conns || m.Seconds < 0 || m.Seconds > maxSeconds || len(m.Unread) > 3 || !nicBounded(m.NICCounters) || m.RxThreadCPU < 0 || len(m.RxNote) > maxErrorText {
				t.Fatalf("end passed: %+v", m)
			}
			if f := m.Foreign; f != nil && (len(f.Top) > telemetry.MaxTop || len(f.CPU) > maxCPUMap || len(f.Own) > maxCPUMap) {
				t.Fatalf("end's other load passed: %+v", f)
			}
		}
		decode(typ, body, msgToolStarted, (*toolStartedMsg).check)
		if m, err := decode(typ, body, msgToolEnd, (*toolEndMsg).check); err == nil && (!nicBounded(m.NICCounters) || !rdmaBounded(m.RDMA)) {
			t.Fatalf("tool_end passed: %+v", m)
		}
		decode(typ, body, msgInterval, (*toolSample).check)
		if m, err := decode(typ, body, msgDoctorReport, (*doctorReportMsg).check); err == nil && !json.Valid(m.Report) {
			t.Fatal("a doctor report that is not JSON passed")
		}
		if err := decodeAs(typ, body, "none", nil); err != nil {
			if pe, ok := err.(*PeerError); ok && len(pe.Reason) > maxReason+len("…") {
				t.Fatalf("a reason of %d bytes passed", len(pe.Reason))
			}
		}
	})
}

// FuzzCRRProof feeds a crr connection's proof to the agent's check:
// whatever holds is exactly the proof the key makes for the flow and the
// connection it names, and no flow beyond the engine's bound.
func FuzzCRRProof(f *testing.F) {
	key, id := bytes.Repeat([]byte{7}, keySize), bytes.Repeat([]byte{9}, testIDSize)
	a := newCRRAdmission(key, id)()
	good := make([]byte, crrProofLen)
	a.Sign(good, 3, 1)
	f.Add(good)
	f.Add(append([]byte("LRCR"), make([]byte, crrProofLen-4)...))
	f.Add([]byte("LRDATA02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		flow, seq, ok := a.Verify(b)
		if !ok {
			return
		}
		want := make([]byte, crrProofLen)
		a.Sign(want, flow, seq)
		if !bytes.Equal(b, want) || flow < 0 || flow > engine.MaxFlows {
			t.Fatalf("proof %x passed for flow %d, connection %d", b, flow, seq)
		}
		if _, _, ok := newCRRAdmission(bytes.Repeat([]byte{8}, keySize), id)().Verify(b); ok {
			t.Fatal("a proof passed under another key")
		}
	})
}

// FuzzPreamble feeds the agent's data preamble reader: nothing without
// the key proves a test.
func FuzzPreamble(f *testing.F) {
	key, id := bytes.Repeat([]byte{7}, keySize), bytes.Repeat([]byte{9}, testIDSize)
	f.Add(preamble(key, id, 0))
	f.Add(preamble(key, id, 1<<31))
	f.Add(append([]byte("LRDATA01"), make([]byte, dataPreambleLen-8)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parsePreamble(b)
		if err != nil {
			return
		}
		if !bytes.Equal(b, preamble(key, id, h.index)) && h.proves(key, id) {
			t.Fatal("a preamble not made with the key proves the test")
		}
	})
}

// FuzzSealed feeds the reader of MACed frames: only the frames the
// sender made pass, in order.
func FuzzSealed(f *testing.F) {
	k, _ := deriveKeys(testToken, bytes.Repeat([]byte{3}, nonceSize), bytes.Repeat([]byte{4}, nonceSize))
	s := &sealing{key: k.clientToAgent}
	body := []byte(`{"type":"stop"}`)
	good := append(bytes.Clone(body), s.tag(body)...)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(`{"type":"stop"}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		in := &sealing{key: k.clientToAgent}
		got, err := in.open(frame)
		if err == nil && !bytes.Equal(frame, good) {
			t.Fatalf("a frame the client never sent passed: %q", got)
		}
	})
}

// TestRandomFrames throws random frames at a live agent for a bounded
// time, before and after a handshake (random bodies, random lengths, valid
// JSON of random types, truncated frames), from many connections at once.
// The agent must not crash, must serve a client afterwards, and must be
// back to the goroutines it had before.
func TestRandomFrames(t *testing.T) {
	srv := &Server{authBudget: 500 * time.Millisecond}
	addr, _ := agent(t, srv)
	time.Sleep(100 * time.Millisecond)
	before := runtime.NumGoroutine()
	d := 2 * time.Second
	if testing.Short() {
		d = 500 * time.Millisecond
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(uint64(w), 42))
			for time.Now().Before(deadline) {
				randomSession(addr, r)
			}
		}()
	}
	wg.Wait()
	if _, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}}}); err != nil {
		t.Fatalf("a good client after the random frames: %v", err)
	}
	// Every connection of the storm ends within its budget.
	var after int
	for range 50 {
		if after = runtime.NumGoroutine(); after <= before {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Errorf("%d goroutines before the random frames, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
}

// randomSession makes one connection of random frames: sometimes after a
// real handshake, so that the sealed reader sees them too.
func randomSession(addr string, r *mrand.Rand) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Second))
	if r.IntN(4) == 0 {
		if _, _, err := clientHandshake(newConn(nc), testToken); err != nil {
			return
		}
	}
	types := []string{msgHello, msgAuth, msgRequest, msgStart, msgStop, msgTool, msgDoctor, msgEnd, "x"}
	for range r.IntN(4) + 1 {
		var b []byte
		switch r.IntN(5) {
		case 0: // random bytes
			b = make([]byte, r.IntN(200))
			rand.Read(b)
		case 1: // a huge or odd length prefix
			b = binary.BigEndian.AppendUint32(nil, r.Uint32())
		case 2: // a valid frame of a random type with random fields
			body := []byte(`{"type":"` + types[r.IntN(len(types))] + `","streams":` + string(rune('0'+r.IntN(10))) + `,"nonce":"AAAA"}`)
			b = append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
		case 3: // a frame announcing more than it sends
			b = append(binary.BigEndian.AppendUint32(nil, uint32(10+r.IntN(1000))), `{"type":`...)
		default: // a data preamble with random contents
			b = make([]byte, dataPreambleLen)
			rand.Read(b)
			copy(b, dataMagic)
		}
		if _, err := nc.Write(b); err != nil {
			return
		}
	}
	nc.Read(make([]byte, 64))
}

// nicBounded restates checkNIC's bounds, for the fuzzer to hold it to.
// rdmaBounded reports whether one end's RDMA counters are within the
// protocol's bounds.
func rdmaBounded(d *result.RDMAEnd) bool {
	if d == nil {
		return true
	}
	if len(d.Device) > maxNICName || len(d.Netdev) > maxNICName || d.Port < 0 || d.Port > maxRDMAPort || len(d.NotRead) > maxErrorText ||
		len(d.HWCounters) > maxRDMAFiles || len(d.Counters) > maxRDMAFiles || len(d.Priority) > 8 {
		return false
	}
	for p, m := range d.Priority {
		if len(p) != 1 || p < "0" || p > "7" || len(m) > rdmastats.PriorityNames {
			return false
		}
	}
	return true
}

func nicBounded(d *result.NICDelta) bool {
	if d == nil {
		return true
	}
	if len(d.Interface) > maxNICName || len(d.Driver) > maxNICName || len(d.NotRead) > maxErrorText ||
		len(d.Deltas) > maxNICCauses || len(d.Sources) > maxNICCauses {
		return false
	}
	for _, src := range d.Sources {
		if len(src) > maxNICSources {
			return false
		}
	}
	return true
}

// TestCheckLoadAndForeign: a hostile agent's per-CPU loads, other-load
// report and unread sources are bounded; honest ones pass.
func TestCheckLoadAndForeign(t *testing.T) {
	id := make([]byte, testIDSize)
	ok := acceptMsg{Port: 5301, TestID: id, Placement: []int{1}, Load: map[string]float64{"0": 97, "1": 2}}
	if err := ok.check(1); err != nil {
		t.Errorf("honest accept: %v", err)
	}
	for _, load := range []map[string]float64{{"x": 1}, {"-1": 1}, {"0": 101}, {"0": -1}, {"999999": 1}} {
		bad := ok
		bad.Load = load
		if err := bad.check(1); err == nil {
			t.Errorf("accept with load %v passed", load)
		}
	}
	f := &telemetry.Foreign{PID: 1, Seconds: 1, CPU: map[string]float64{"0": 96}, Top: []telemetry.Proc{{PID: 2, Name: "stress-ng", CPUPct: 95, CPU: 0}}}
	end := endMsg{Streams: []engine.StreamTotal{{ID: 1}}, Seconds: 1, Foreign: f, Unread: map[string]string{telemetry.SrcSoftirqs: "permission denied"}}
	if err := end.check(1); err != nil {
		t.Errorf("honest end: %v", err)
	}
	for name, mod := range map[string]func(*endMsg){
		"window": func(m *endMsg) { m.Seconds = -1 },
		"source": func(m *endMsg) { m.Unread = map[string]string{"etc/shadow": "x"} },
		"pid":    func(m *endMsg) { m.Foreign = &telemetry.Foreign{PID: -5} },
		"name": func(m *endMsg) {
			m.Foreign = &telemetry.Foreign{Top: []telemetry.Proc{{Name: strings.Repeat("x", 65)}}}
		},
		"share":       func(m *endMsg) { m.Foreign = &telemetry.Foreign{CPU: map[string]float64{"0": 250}} },
		"processes":   func(m *endMsg) { m.Foreign = &telemetry.Foreign{Top: make([]telemetry.Proc, telemetry.MaxTop+1)} },
		"process CPU": func(m *endMsg) { m.Foreign = &telemetry.Foreign{Top: []telemetry.Proc{{CPU: -2}}} },
	} {
		bad := end
		mod(&bad)
		if err := bad.check(1); err == nil {
			t.Errorf("end with a bad %s passed", name)
		}
	}
}
