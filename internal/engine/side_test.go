package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// sides connects p's flows over loopback and returns both ends' Sides,
// the client's and the agent's, as package agent would make them: the
// client's streams send where p.ClientSends says, the agent's the other
// way; flows on thread k go to CPU -1 (unpinned).
func sides(t testing.TB, p Params) (client, agent *Side) {
	t.Helper()
	var cs, as []*Stream
	n := p.Connections()
	for i := range n {
		var cfd, afd = -1, -1
		if p.Mode != result.CRR {
			c, a := streamPair(t, false)
			cfd, afd = c.FD, a.FD
		}
		send := p.ClientSends(i)
		cs = append(cs, &Stream{ID: i + 1, Send: send, CPU: -1, FD: cfd})
		as = append(as, &Stream{ID: i + 1, Send: !send, CPU: -1, FD: afd})
	}
	var err error
	if client, err = NewSide(p, cs, nil, "tc"); err != nil {
		t.Fatal(err)
	}
	if agent, err = NewSide(p, as, nil, "ta"); err != nil {
		t.Fatal(err)
	}
	if p.Mode == result.CRR {
		lns, port, err := ListenCRR(netip.MustParseAddr("127.0.0.1"), agent.p.Threads)
		if err != nil {
			t.Fatal(err)
		}
		adm := func() Admission { return &testAdmission{} }
		agent.SetCRR(CRR{Listeners: lns, Client: netip.MustParseAddr("127.0.0.1"), NewAdmission: adm})
		client.SetCRR(CRR{Peer: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), NewAdmission: adm})
	}
	t.Cleanup(func() { client.Close(); agent.Close() })
	return client, agent
}

// testAdmission is a proof without a key: the flow and the connection's
// number, and a magic word. Package agent's proof is keyed.
type testAdmission struct{}

func (testAdmission) Len() int { return 12 }
func (testAdmission) Sign(dst []byte, flow int, seq uint32) {
	binary.LittleEndian.PutUint32(dst, 0x4c524352)
	binary.LittleEndian.PutUint32(dst[4:], uint32(flow))
	binary.LittleEndian.PutUint32(dst[8:], seq)
}
func (testAdmission) Verify(b []byte) (int, uint32, bool) {
	return int(binary.LittleEndian.Uint32(b[4:])), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b) == 0x4c524352
}

// drive runs both ends through their schedule as the agent protocol
// does: the client samples at its boundaries, the agent at the same
// moments, then both stop and drain.
func drive(t *testing.T, client, agent *Side) (cs, as []Sample) {
	t.Helper()
	agent.Begin()
	client.Begin()
	for !client.Done() {
		due, _ := client.Due()
		time.Sleep(time.Until(due))
		cs = append(cs, client.Sample())
		if client.Done() {
			client.Halt()
			agent.EndNow()
		}
		as = append(as, agent.Sample())
	}
	agent.Halt()
	client.Finish(5 * time.Second)
	agent.Finish(5 * time.Second)
	for _, e := range append(client.Errors(), agent.Errors()...) {
		t.Errorf("thread error: %s", e)
	}
	return cs, as
}

func short(p Params) Params {
	p.Duration, p.Omit, p.Interval = 600*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	if p.Direction == "" {
		p.Direction = result.Send
	}
	return p
}
