package tune

import (
	"testing"
)

// TestSameCPUs: a written IRQ affinity is verified as a CPU set, so the
// kernel's "7-8" reads back as the "7,8" written; a list that does not
// parse falls back to comparing its fields.
func TestSameCPUs(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"7-8", "7,8", true},
		{"7-8\n", " 7,8", true},
		{"0-3,8", "0,1,2,3,8", true},
		{"7-8", "7,9", false},
		{"7-8", "x", false}, // one side unparsable: fields differ
		{"x y", "x  y", true},
		{"x", "y", false},
	} {
		if got := sameCPUs(tt.a, tt.b); got != tt.want {
			t.Errorf("sameCPUs(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
