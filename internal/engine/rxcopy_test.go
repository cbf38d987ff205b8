package engine

import (
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// TestTruncSupport: this kernel skips the copy with MSG_TRUNC (Linux has
// since long before the engine's oldest supported kernel); the probe
// would say otherwise.
func TestTruncSupport(t *testing.T) {
	ok, err := TruncSupport()
	if err != nil || !ok {
		t.Fatalf("MSG_TRUNC on TCP: %v, %v", ok, err)
	}
	if m, note := RxMethod(result.MsgTrunc); m != result.MsgTrunc || note != "" {
		t.Errorf("RxMethod(msg_trunc) = %q, %q", m, note)
	}
}
