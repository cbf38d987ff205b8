package agent

import (
	"testing"
)

// TestCRRProofAllocs: making and checking a crr connection's proof, once
// per transaction on both ends, allocates nothing; a proof holds for its
// flow and connection only.
func TestCRRProofAllocs(t *testing.T) {
	a := newCRRAdmission([]byte("0123456789abcdef0123456789abcdef"), []byte("test-id-16-bytes"))()
	b := make([]byte, a.Len())
	allocs := testing.AllocsPerRun(1000, func() {
		a.Sign(b, 7, 42)
		if f, s, ok := a.Verify(b); !ok || f != 7 || s != 42 {
			t.Fatalf("own proof: %d %d %v", f, s, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per proof made and checked", allocs)
	}
	b[len(b)-1] ^= 1
	if _, _, ok := a.Verify(b); ok {
		t.Error("an altered tag passed")
	}
	other := newCRRAdmission([]byte("0123456789abcdef0123456789abcdef"), []byte("another-test-id!"))()
	a.Sign(b, 7, 42)
	if _, _, ok := other.Verify(b); ok {
		t.Error("a proof of another test passed")
	}
}
