package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// An agent tells an authenticated client its doctor report, so that a
// bench run stores both hosts' linerate.doctor/v1 documents:
//
//	client → doctor
//	agent  → doctor_report{report, host} | error
//
// The report is for the interface holding the address the client reached
// the agent on. It is the one message larger than maxFrame.

// DoctorFunc diagnoses the agent's host for iface (the interface holding the
// address the client reached it on; "" when unknown)
// and returns its linerate.doctor/v1 document.
type DoctorFunc func(iface string) (json.RawMessage, error)

// serveDoctor answers a doctor request.
func (ss *session) serveDoctor() {
	if ss.srv.Doctor == nil {
		ss.refuse(errors.New("this agent does not report its doctor findings"))
		return
	}
	rep, err := ss.runDoctor()
	if err != nil {
		ss.refuse(fmt.Errorf("doctor on the agent's host: %w", err))
		return
	}
	if len(rep) > maxDoctorFrame-4096 {
		ss.refuse(fmt.Errorf("the agent's doctor report is %d bytes, over the %d the protocol carries", len(rep), maxDoctorFrame))
		return
	}
	ss.free()
	if err := ss.ctrl.send(doctorReportMsg{Type: msgDoctorReport, Report: rep, Host: ss.host}, handshakeTimeout); err != nil {
		ss.log.Warn("sending the doctor report", "reason", err.Error())
		return
	}
	ss.log.Info("doctor report sent", "bytes", len(rep))
}

// defaultDoctorBudget bounds how long a client's doctor request holds the
// agent: doctor reads sysfs, procfs and netlink, and a wedged NIC can make
// such a read hang. It is below the client's wait for the answer.
const defaultDoctorBudget = 10 * time.Second

// runDoctor runs the agent's Doctor within its budget. A doctor that
// overruns is left to finish on its own goroutine, and no other starts
// until it has: stuck reads do not pile up.
func (ss *session) runDoctor() (json.RawMessage, error) {
	if !ss.srv.doctoring.CompareAndSwap(false, true) {
		return nil, errors.New("an earlier doctor run has not finished (a read of the host hangs?)")
	}
	type result struct {
		rep json.RawMessage
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer ss.srv.doctoring.Store(false)
		rep, err := ss.srv.Doctor(ss.host.Iface)
		ch <- result{rep, err}
	}()
	select {
	case r := <-ch:
		return r.rep, r.err
	case <-time.After(ss.srv.doctorBudget()):
		return nil, fmt.Errorf("it took over %s", ss.srv.doctorBudget())
	}
}

func (s *Server) doctorBudget() time.Duration {
	if s.DoctorBudget > 0 {
		return s.DoctorBudget
	}
	return defaultDoctorBudget
}

// FetchDoctor asks the agent at peer for its doctor report, and returns it
// with what the agent said about its host.
func FetchDoctor(ctx context.Context, peer string, token []byte) (json.RawMessage, *result.HostInfo, error) {
	if err := clientToken(token); err != nil {
		return nil, nil, err
	}
	addr := WithPort(peer, DefaultPort)
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the agent at %s: %w (is 'linerate serve' running there?)", addr, err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	rep, host, err := fetchDoctor(newConn(nc), token)
	if err != nil && ctx.Err() != nil {
		return nil, nil, fmt.Errorf("asking the agent for its doctor report: %w", context.Cause(ctx))
	}
	return rep, host, err
}

func fetchDoctor(c *conn, token []byte) (json.RawMessage, *result.HostInfo, error) {
	if _, _, err := clientHandshake(c, token); err != nil {
		return nil, nil, err
	}
	if err := c.send(bareMsg{Type: msgDoctor}, handshakeTimeout); err != nil {
		return nil, nil, fmt.Errorf("asking for the agent's doctor report: %w", err)
	}
	c.limit = maxDoctorFrame
	var m doctorReportMsg
	if err := c.expect(msgDoctorReport, &m, setupTimeout); err != nil {
		return nil, nil, fmt.Errorf("reading the agent's doctor report: %w", err)
	}
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	return m.Report, &m.Host, nil
}
