package agent

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/telemetry"
)

// A mesh agent's own host record: whether its CPUs were busy with other
// work in each bucket (a pair's RTT is then inconclusive), whether its
// UDP socket buffers overflowed (a loss is then the host's), and every
// minute its evidence: the NIC's counters, the module's flags, the CPUs'
// other load and who made it.

// Contention thresholds of one bucket: the host's CPUs this busy with
// other work on average, or the agent woken this late.
const (
	contendedBusyPct = 90
	contendedLate    = 5 * time.Millisecond
	evidenceEvery    = time.Minute
	firstEvidence    = 15 * time.Second
)

// hostRecord is what the agent knows of its own host.
type hostRecord struct {
	lateNS   atomic.Int64 // the bucket's worst wake-up delay
	lateMaxM atomic.Int64 // the minute's

	// The bucket's readings, the prober's goroutine only.
	stat    *hostfs.CPUStat
	ownCPU  float64
	rcvbuf  float64
	haveBuf bool

	mu       sync.Mutex
	evidence *mesh.HostEvidence // the last minute's
	cpuPct   *float64           // the agent's own share of a CPU, last minute
	rss      *uint64
}

// late records one wake-up delay of the prober.
func (r *hostRecord) late(d time.Duration) {
	for _, a := range []*atomic.Int64{&r.lateNS, &r.lateMaxM} {
		for {
			old := a.Load()
			if int64(d) <= old || a.CompareAndSwap(old, int64(d)) {
				break
			}
		}
	}
}

// bucket reads this bucket's contention: the CPUs' busy share from other
// work than this process, the worst wake-up delay, and whether UDP
// datagrams were dropped for want of socket buffer.
func (r *hostRecord) bucket(fs *hostfs.FS) (contended, drops bool) {
	late := time.Duration(r.lateNS.Swap(0))
	contended = late >= contendedLate
	own := processCPU()
	if st, err := fs.CPUStat(); err == nil {
		if r.stat != nil {
			if busy, ok := otherBusyPct(r.stat, st, own-r.ownCPU); ok && busy >= contendedBusyPct {
				contended = true
			}
		}
		r.stat = st
	}
	r.ownCPU = own
	if n, ok := udpRcvbufErrors(); ok {
		drops = r.haveBuf && n > r.rcvbuf
		r.rcvbuf, r.haveBuf = n, true
	}
	return contended, drops
}

// otherBusyPct is the mean busy share of the host's CPUs between two
// readings of /proc/stat, less ownS CPU seconds of this process.
func otherBusyPct(a, b *hostfs.CPUStat, ownS float64) (float64, bool) {
	total := float64(b.All.Total()) - float64(a.All.Total())
	busy := float64(b.All.Busy()) - float64(a.All.Busy())
	if total <= 0 {
		return 0, false
	}
	busy -= ownS * 100 // USER_HZ
	return math.Max(0, 100*busy/total), true
}

// udpRcvbufErrors is the host's count of UDP datagrams dropped for want of
// socket buffer (Udp: RcvbufErrors of /proc/net/snmp, this network
// namespace's).
func udpRcvbufErrors() (float64, bool) {
	p, err := procfs.Self()
	if err != nil {
		return 0, false
	}
	s, err := p.Snmp()
	if err != nil || s.Udp.RcvbufErrors == nil {
		return 0, false
	}
	return *s.Udp.RcvbufErrors, true
}

// evidenceLoop reads the host's evidence every minute.
func (ms *meshSession) evidenceLoop() {
	fs := ms.node.srv.fs()
	iface := ifaceOf(ms.node.local.Addr())
	var nicBefore *nicstats.Counters
	nicErr := ""
	readNIC := func() {
		if iface == "" {
			nicErr = "no interface holds the agent's address"
			return
		}
		c, err := nicstats.Snapshot(iface)
		if err != nil {
			nicBefore, nicErr = nil, err.Error()
			return
		}
		nicBefore, nicErr = &c, ""
	}
	readNIC()
	rcv0, haveRcv := udpRcvbufErrors()
	cpu0, at0 := processCPU(), time.Now()
	foreign := telemetry.StartForeign(fs, os.Getpid())
	// The first reading comes soon, so that a mesh just up has its
	// hosts' evidence; then one a minute.
	t := time.NewTimer(firstEvidence)
	defer t.Stop()
	for {
		select {
		case <-ms.ctx.Done():
			foreign.Stop()
			return
		case <-t.C:
			t.Reset(evidenceEvery)
		}
		now := time.Now()
		e := &mesh.HostEvidence{Interface: iface, SpanS: math.Round(now.Sub(at0).Seconds())}
		before := nicBefore
		readNIC()
		switch {
		case nicErr != "":
			e.NICNotRead = nicErr
		case before != nil:
			d := nicstats.Delta(*before, *nicBefore)
			e.NIC = map[string]uint64{}
			for c, n := range d.ByCause {
				e.NIC[string(c)] = n.Value
			}
		}
		e.Module, e.ModuleNotRead = moduleFlags(iface)
		if n, ok := udpRcvbufErrors(); ok && haveRcv {
			e.UDPBufferDrops = uint64(max(n-rcv0, 0))
			rcv0 = n
		}
		if f, err := foreign.Stop(); err == nil && f != nil {
			var sum float64
			for _, v := range f.CPU {
				sum += v
			}
			ncpu := 0
			if st, err := fs.CPUStat(); err == nil {
				ncpu = len(st.PerCPU)
			}
			if ncpu > 0 {
				b := math.Round(10*sum/float64(ncpu)) / 10
				e.CPUBusyPct = &b
			}
			for _, p := range f.Top {
				e.Top = append(e.Top, mesh.ProcUse{PID: p.PID, Name: p.Name, CPUPct: p.CPUPct})
			}
		}
		foreign = telemetry.StartForeign(fs, os.Getpid())
		e.LateMS = math.Round(float64(ms.host.lateMaxM.Swap(0))/1e5) / 10
		cpu := processCPU()
		pct := math.Round(1e4*(cpu-cpu0)/now.Sub(at0).Seconds()) / 100
		cpu0, at0 = cpu, now
		rss := residentBytes()
		ms.host.mu.Lock()
		ms.host.evidence, ms.host.cpuPct = e, &pct
		if rss > 0 {
			ms.host.rss = &rss
		}
		ms.host.mu.Unlock()
	}
}

// ifaceOf names the interface holding addr, or "".
func ifaceOf(addr netip.Addr) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr {
				return i.Name
			}
		}
	}
	return ""
}

// moduleFlags reads the plugged module's monitors and lists the alarm and
// warning flags set, or says why it could not.
func moduleFlags(iface string) ([]string, string) {
	if iface == "" {
		return nil, "no interface"
	}
	c, err := ethtool.Open()
	if err != nil {
		return nil, err.Error()
	}
	defer c.Close()
	f := &ethtool.Facts{NotRead: map[string]string{}}
	f.ReadModule(c, iface)
	if f.ModuleError != "" || len(f.Module) == 0 {
		why := f.ModuleError
		if why == "" {
			why = "no module memory"
		}
		return nil, why
	}
	m, err := sff.Decode(f.Module)
	if err != nil {
		return nil, err.Error()
	}
	var out []string
	out = append(out, m.Alarms...)
	for _, l := range m.Lanes {
		for _, fl := range l.Flags {
			out = append(out, fmt.Sprintf("lane %d: %s", l.Lane, fl))
		}
		if l.RXLOS != nil && *l.RXLOS {
			out = append(out, fmt.Sprintf("lane %d: rx_los", l.Lane))
		}
		if l.TXFault != nil && *l.TXFault {
			out = append(out, fmt.Sprintf("lane %d: tx_fault", l.Lane))
		}
	}
	return slices.Compact(out), ""
}

// residentBytes is this process's resident memory (/proc/self/statm).
func residentBytes() uint64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return uint64(st.ResidentMemory())
}

// hostEvidence returns the last minute's evidence and the agent's cost.
func (ms *meshSession) hostEvidence() (*mesh.HostEvidence, *float64, *uint64) {
	ms.host.mu.Lock()
	defer ms.host.mu.Unlock()
	return ms.host.evidence, ms.host.cpuPct, ms.host.rss
}
