package engine

import "testing"

// TestRingBlocks: the MSG_ZEROCOPY ring holds the socket's send buffer, a
// power of two of blocks between 2 MiB and 32 MiB.
func TestRingBlocks(t *testing.T) {
	for _, tt := range []struct{ buf, want int }{
		{0, 16}, {46080, 16}, {2 << 20, 16}, {2<<20 + 1, 32}, {4 << 20, 32},
		{8 << 20, 64}, {2 * (6 << 20), 128}, {1 << 30, 256},
	} {
		if got := ringBlocks(tt.buf); got != tt.want {
			t.Errorf("ringBlocks(%d) = %d, want %d", tt.buf, got, tt.want)
		}
	}
}
