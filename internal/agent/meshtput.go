package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/result"
)

// The mesh's throughput tests: in each slot of the schedule
// (mesh.TputSchedule), the agent runs the tests it sends, one native test
// of one stream each, toward the peer's agent, authenticated with the
// pair's test key. While it runs one it takes no test of anyone (the
// agent is busy), as the peer is while it serves it.

// foreignLimit: other load this high on a CPU a test's thread ran on
// makes the test inconclusive.
const foreignLimit = 25.0

// throughputLoop runs this agent's tests of each slot, SlotMargin after
// the slot begins.
func (ms *meshSession) throughputLoop() {
	for {
		k := mesh.Slot(time.Now()) + 1
		t := time.NewTimer(time.Until(mesh.SlotStart(k).Add(mesh.SlotMargin)))
		select {
		case <-ms.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		for _, tt := range ms.tput.Tests(k) {
			if tt.From == ms.self && ms.peers[tt.To] != nil {
				ms.runTput(ms.peers[tt.To])
			}
		}
	}
}

// runTput runs one test toward p and judges the pair with it.
func (ms *meshSession) runTput(p *meshPeer) {
	srv := ms.node.srv
	ms.node.busy.Store(true)
	defer ms.node.busy.Store(false)
	srv.mu.Lock()
	active := len(srv.active) > 0
	srv.mu.Unlock()
	log := ms.node.log.With("peer", p.name)
	if active {
		ms.tputSkipped(p, "this agent was running a test")
		return
	}
	ctx, cancel := context.WithTimeout(ms.ctx, mesh.MaxTestTime)
	defer cancel()
	cfg := Config{Peer: p.dst.String(), Token: srv.Token, Host: srv.Host, Logger: slog.New(slog.DiscardHandler),
		Test: Test{Params: engine.Params{Streams: 1, Duration: mesh.TestTime, Omit: mesh.TestOmit,
			Interval: mesh.TestTime, Direction: result.Send}}}
	cred := credentials{mesh: &meshAuth{ID: ms.id, From: ms.hosts[ms.self].Name, To: p.name}, meshKey: meshTestKey(p.out)}
	res, err := runWith(ctx, cfg, cred)
	if err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && pe.Busy {
			ms.tputSkipped(p, "the peer was busy")
			return
		}
		log.Warn("mesh: throughput test failed", "reason", err.Error())
		ms.mu.Lock()
		p.lastTputErr = err.Error()
		ms.mu.Unlock()
		return
	}
	gbps := res.End.SumReceived.BitsPerSecond / 1e9
	why := tputContention(res)
	log.Info("mesh: throughput test", "gbps", fmt.Sprintf("%.3f", gbps), "inconclusive", why)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	p.tputs++
	p.lastTputErr, p.lastTputInconclusive = "", why
	p.verdict = p.pair.AddTput(mesh.Tput{End: time.Now().Unix(), Gbps: gbps, Inconclusive: why})
}

func (ms *meshSession) tputSkipped(p *meshPeer, why string) {
	ms.node.log.Info("mesh: throughput test skipped", "peer", p.name, "reason", why)
	ms.mu.Lock()
	p.tputsSkipped++
	ms.mu.Unlock()
}

// tputContention says what in a test's own record keeps it from judging
// its pair (its ends shared a CPU; a CPU its threads ran on was busy with
// other work), or "".
func tputContention(res *result.Result) string {
	st := res.Start
	if st.Client.BootID != "" && st.Client.BootID == st.Server.BootID {
		for _, c := range st.Placement.Client {
			if slices.Contains(st.Placement.Server, c) {
				return fmt.Sprintf("both ends of its throughput test ran on CPU %d", c)
			}
		}
	}
	for _, end := range []struct {
		name string
		cpus []int
		f    *result.Foreign
	}{{"sender", st.Placement.Client, res.End.Foreign.Client}, {"receiver", st.Placement.Server, res.End.Foreign.Server}} {
		if end.f == nil {
			continue
		}
		for _, c := range end.cpus {
			if busy := end.f.CPU[strconv.Itoa(c)]; busy >= foreignLimit {
				return fmt.Sprintf("CPU %d of its throughput test's %s was %.0f%% busy with other work", c, end.name, busy)
			}
		}
	}
	return ""
}
