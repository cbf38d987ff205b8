package agent

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
)

// The hostile neighbour of issue 13: from the client's own lab host (so
// from the client's own address), it holds hostileSilent connections to
// the agent that never send a byte (each reopened 100 ms after the agent
// closes it) and opens hostileJunkRate connections a second that send
// junk: random bytes, a huge length prefix, an HTTP request, or a
// well-formed frame that is no message of the protocol.
const (
	hostileSilent   = 700
	hostileJunkRate = 300
)

// hostile runs the neighbour against addr until ctx is done. It prints
// "holding N" once N silent connections are open.
func hostile(ctx context.Context, addr string) int {
	var held atomic.Int64
	var wg sync.WaitGroup
	for range hostileSilent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err == nil {
					held.Add(1)
					stop := context.AfterFunc(ctx, func() { c.Close() })
					io.Copy(io.Discard, c) // until the agent closes it
					stop()
					c.Close()
					held.Add(-1)
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	go func() {
		for ctx.Err() == nil && held.Load() < hostileSilent {
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Printf("holding %d\n", held.Load())
	}()
	t := time.NewTicker(time.Second / hostileJunkRate)
	defer t.Stop()
	sem := make(chan struct{}, 256) // junk connections in flight
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			return 0
		case <-t.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // the agent is slow to close junk: do not pile up here
		}
		go func() {
			defer func() { <-sem }()
			junk(addr, i)
		}()
	}
}

// junk sends one connection's worth of junk and waits a moment for the
// agent to hang up.
func junk(addr string, i int) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	var b []byte
	switch i % 4 {
	case 0:
		b = make([]byte, 1+mrand.IntN(512))
		rand.Read(b)
	case 1:
		b = binary.BigEndian.AppendUint32(nil, 0xfffffff0)
		b = append(b, "AAAAAAAAAAAAAAAA"...)
	case 2:
		b = []byte("GET / HTTP/1.1\r\nHost: agent\r\nUser-Agent: curl/7.88.1\r\n\r\n")
	default:
		body := []byte(`{"type":"request","streams":128,"duration_ms":3600000}`)
		b = append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write(b)
	io.Copy(io.Discard, c)
}

// TestHostileNeighbour is issue 13's scenario: in a shaped lab, with the
// agent in host b, five runs of a legitimate client in host a alternate
// with clean runs, each made while the hostile neighbour works from host a
// too. Every attacked run must complete, the median of their ratios to the
// clean runs around them at 90% or more (the machine has two CPUs and is
// shared: like is compared with like, one moment apart); the agent's peak
// RSS stays under 100 MB and it logs under 100 lines for each attack,
// summaries included.
func TestHostileNeighbour(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	needRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-hostile"
	// Shaped below what this machine's two CPUs move while the neighbour
	// runs beside the client (on a network the neighbour would sit on a
	// host of its own and cost the client no CPU): the test measures what
	// the agent does to the client, not what a process sharing its CPUs
	// does. Under -race every process here runs instrumented, slower.
	rate := lab.Rate(2_000_000_000)
	if raceEnabled {
		rate = 1_000_000_000
	}
	if _, err := lab.Up(context.Background(), lab.Config{Name: name, Scenario: lab.Capped10G, Rate: rate}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	addr := lab.AddrB + ":5301"
	env := append(os.Environ(), TokenEnv+"="+string(testToken))
	log := &timedLines{}
	srv := exec.Command(os.Args[0], addr)
	srv.Env = append(env, helperEnv+"=serve", "ONCE=0")
	srv.Stderr = log
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(name, lab.B, srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
		if t.Failed() || testing.Verbose() {
			t.Logf("agent log:\n%s", log.String())
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, ListeningPrefix) {
		t.Fatalf("agent: %q %v", line, err)
	}
	const secs = "3"
	var clean, ratios []float64
	var episodes [][2]time.Time
	var cleanCPU, cleanSecs float64
	cleanRun := func() float64 {
		cpu0, t0 := procCPU(t, srv.Process.Pid), time.Now()
		bps := labClient(t, name, addr, secs)
		cleanCPU += procCPU(t, srv.Process.Pid) - cpu0
		cleanSecs += time.Since(t0).Seconds()
		return bps
	}
	clean = append(clean, cleanRun())
	var attackCPU, attackSecs float64
	for range 5 {
		stop, start := startHostile(t, name, addr)
		cpu0 := procCPU(t, srv.Process.Pid)
		attacked := labClient(t, name, addr, secs)
		end := stop()
		attackCPU += procCPU(t, srv.Process.Pid) - cpu0
		attackSecs += end.Sub(start).Seconds()
		episodes = append(episodes, [2]time.Time{start, end})
		clean = append(clean, cleanRun())
		ref := (clean[len(clean)-2] + clean[len(clean)-1]) / 2
		ratios = append(ratios, attacked/ref)
		t.Logf("attacked %.2f Gbit/s, clean around it %.2f and %.2f: %.0f%%", attacked/1e9,
			clean[len(clean)-2]/1e9, clean[len(clean)-1]/1e9, 100*attacked/ref)
	}
	t.Logf("agent CPU: %.2f s in %.1f s of attacks, %.2f s in %.1f s of clean runs (tests included)", attackCPU, attackSecs, cleanCPU, cleanSecs)
	slices.Sort(ratios)
	if m := ratios[len(ratios)/2]; m < 0.9 {
		t.Errorf("attacked runs made a median %.0f%% of the clean runs around them (%v), want at least 90%%", 100*m, ratios)
	}
	hwm := vmHWM(t, srv.Process.Pid)
	limit := int64(100 << 20)
	if raceEnabled {
		limit *= 10 // the agent is this test binary, built with -race
	}
	t.Logf("agent peak RSS %.1f MB (race detector: %v)", float64(hwm)/(1<<20), raceEnabled)
	if hwm >= limit {
		t.Errorf("agent peak RSS %d MB, want under %d", hwm>>20, limit>>20)
	}
	// Each attack's summaries come within a log window (10 s) of its end.
	time.Sleep(11 * time.Second)
	for i, ep := range episodes {
		n := log.between(ep[0], ep[1].Add(10*time.Second))
		t.Logf("attack %d: %d agent log lines", i+1, n)
		if n >= 100 {
			t.Errorf("attack %d: the agent logged %d lines, want under 100", i+1, n)
		}
	}
}

// labClient runs one legitimate test from host a and returns the rate
// received.
func labClient(t *testing.T, name, addr, secs string) float64 {
	t.Helper()
	cli := exec.Command(os.Args[0], addr, secs)
	cli.Env = append(os.Environ(), TokenEnv+"="+string(testToken), helperEnv+"=client")
	var stderr strings.Builder
	cli.Stderr = &stderr
	cout, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(name, lab.A, cli); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(cout)
	r.ReadString('\n') // "started"
	var res result.Result
	derr := json.NewDecoder(r).Decode(&res)
	if err := cli.Wait(); err != nil {
		t.Fatalf("legitimate client: %v: %s", err, stderr.String())
	}
	if derr != nil {
		t.Fatalf("legitimate client's result: %v", derr)
	}
	bps := res.End.SumReceived.BitsPerSecond
	if bps <= 0 || math.IsNaN(bps) {
		t.Fatalf("legitimate client moved nothing: %+v", res.End)
	}
	return bps
}

// startHostile starts the neighbour in host a and returns once it holds
// its silent connections; stop ends it and says when.
func startHostile(t *testing.T, name, addr string) (stop func() time.Time, started time.Time) {
	t.Helper()
	h := exec.Command(os.Args[0], addr)
	h.Env = append(os.Environ(), helperEnv+"=hostile")
	h.Stderr = os.Stderr
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started = time.Now()
	if err := lab.Start(name, lab.A, h); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "holding ") {
		h.Process.Kill()
		h.Wait()
		t.Fatalf("hostile neighbour: %q %v", line, err)
	}
	return func() time.Time {
		h.Process.Signal(syscall.SIGTERM)
		h.Wait()
		return time.Now()
	}, started
}

// vmHWM reads a process's peak resident set size.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := hostfs.Live().ReadString("proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// timedLines keeps each line written to it with the time it arrived.
type timedLines struct {
	mu    sync.Mutex
	buf   []byte
	lines []timedLine
}

type timedLine struct {
	at   time.Time
	text string
}

func (l *timedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := slices.Index(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.lines = append(l.lines, timedLine{time.Now(), string(l.buf[:i])})
		l.buf = l.buf[i+1:]
	}
}

// between counts the lines that arrived in [from, to].
func (l *timedLines) between(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ln := range l.lines {
		if !ln.at.Before(from) && !ln.at.After(to) {
			n++
		}
	}
	return n
}

func (l *timedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ln := range l.lines {
		fmt.Fprintf(&b, "%s %s\n", ln.at.Format("15:04:05.000"), ln.text)
	}
	return b.String()
}

// procCPU reads a process's user and system CPU seconds.
func procCPU(t *testing.T, pid int) float64 {
	t.Helper()
	stat, err := hostfs.Live().ReadString("proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in ")".
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
