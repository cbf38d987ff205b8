package agent

import (
	"context"
	"fmt"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/telemetry"
)

// look is a look at the host's CPUs taken in the background
// (telemetry.Look) while the handshake and the request go on: both ends
// look at once, so the look costs a test about telemetry.LookTime.
type look struct {
	done chan struct{}
	load *telemetry.Looked
	err  error
}

func startLook(ctx context.Context, fs *hostfs.FS) *look {
	l := &look{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.load, l.err = telemetry.Look(ctx, fs, telemetry.LookTime)
	}()
	return l
}

// wait returns what the look saw, or nil and a note saying why it saw
// nothing.
func (l *look) wait() (*telemetry.Looked, string) {
	<-l.done
	if l.err != nil {
		return nil, fmt.Sprintf("CPU load before the run unknown (%v): placement could not avoid busy CPUs", l.err)
	}
	return l.load, ""
}
