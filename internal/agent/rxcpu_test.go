package agent

import (
	"testing"

	"github.com/linerate/linerate/internal/engine"
)

// TestReceiverCPU: a stream's rx_cpu comes from the end that receives it
// — the agent's sample when the client sends, the client's own when it
// receives — and is absent when that end's sample is.
func TestReceiverCPU(t *testing.T) {
	zero, one := 0, 1
	mine := engine.StreamSample{ID: 1, RxCPU: &zero}
	theirs := &engine.Sample{Streams: []engine.StreamSample{{ID: 1, RxCPU: &one}}}
	if got := receiverCPU(true, mine, theirs, 0); got == nil || *got != 1 {
		t.Errorf("client sends: %v, want the agent's CPU 1", got)
	}
	if got := receiverCPU(false, mine, theirs, 0); got == nil || *got != 0 {
		t.Errorf("client receives: %v, want its own CPU 0", got)
	}
	if got := receiverCPU(true, mine, nil, 0); got != nil {
		t.Errorf("no agent sample: %v, want none", *got)
	}
	if got := receiverCPU(true, mine, theirs, 3); got != nil {
		t.Errorf("stream beyond the agent's sample: %v, want none", *got)
	}
}
