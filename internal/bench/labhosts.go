package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// LabPrefix marks a peer that is a lab: "lab:NAME" runs the client in
// host a and the server in host b of lab NAME.
const LabPrefix = "lab:"

// LabHosts runs an external tool across a lab: the client in host a, the
// server in host b, both started directly (no agent is needed on one
// machine).
type LabHosts struct {
	Name   string
	bootID string
}

// NewLabHosts returns the hosts of lab name.
func NewLabHosts(name string) (*LabHosts, error) {
	if err := lab.ValidateName(name); err != nil {
		return nil, err
	}
	fs := hostfs.Live()
	defer fs.Close()
	boot, _ := fs.ReadString("proc/sys/kernel/random/boot_id")
	return &LabHosts{Name: name, bootID: boot}, nil
}

// Addr is host b's lab address.
func (l *LabHosts) Addr() string { return lab.AddrB }

// StartClient starts cmd in host a.
func (l *LabHosts) StartClient(cmd *exec.Cmd) error { return lab.Start(l.Name, lab.A, cmd) }

// Iface is the lab link's interface.
func (l *LabHosts) Iface() string { return lab.Iface }

// NICIRQs is empty: a veth has no interrupts.
func (l *LabHosts) NICIRQs() []int { return nil }

// Facts describes both lab hosts: one machine, so one boot ID.
func (l *LabHosts) Facts() (result.HostInfo, result.HostInfo) {
	h, _ := os.Hostname()
	c := result.HostInfo{Hostname: h, BootID: l.bootID, Iface: lab.Iface}
	return c, c
}

// StartServer starts t in host b as the agent starts it — pinned,
// without privilege (toolserver.StartIn) — from a thread that entered
// host b and lasts as long as the server, so the server dies with this
// process.
func (l *LabHosts) StartServer(ctx context.Context, t toolserver.ToolServer, _ time.Duration) (ServerProc, []string, error) {
	argv, err := t.Argv()
	if err != nil {
		return nil, nil, err
	}
	s, err := toolserver.StartIn(t, func() error {
		if err := lab.Enter(l.Name, lab.B); err != nil {
			return fmt.Errorf("%w (run 'linerate lab up --name %s')", err, l.Name)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return s, argv, nil
}

// Doctor returns the linerate.doctor/v1 report of lab host h, for its
// lab link: what `linerate lab exec NAME h -- linerate doctor --iface
// lab0 --json` prints, computed in this process on a thread that entered
// the host's namespaces.
func (l *LabHosts) Doctor(h lab.Host) (json.RawMessage, error) {
	// The thread enters the host's mount namespace for good: it is thrown
	// away afterwards.
	var doc json.RawMessage
	err := osthread.Throwaway(func() (err error) {
		doc, err = l.doctorHere(h)
		return err
	})
	return doc, err
}

func (l *LabHosts) doctorHere(h lab.Host) (json.RawMessage, error) {
	if err := lab.Enter(l.Name, h); err != nil {
		return nil, fmt.Errorf("%w (run 'linerate lab up --name %s')", err, l.Name)
	}
	return doctor.LiveReport(lab.Iface)
}

// withTimeout bounds a driver's run: its duration, warm-up, and a margin
// for setup and the end.
func withTimeout(ctx context.Context, p Params) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.Duration+p.Omit+30*time.Second)
}
