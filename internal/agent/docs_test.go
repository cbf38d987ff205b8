package agent

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocsSayPendingCaps: the per-source and total caps on pending
// connections the documents state are the ones the gate applies (they
// once said 2112 per source where the code allowed 1088).
func TestDocsSayPendingCaps(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"doc.go", fmt.Sprintf("at most %d pending per\n// source address and %d in all", defaultMaxPendingPerSource, defaultMaxPending)},
		{"../../docs/architecture.md", fmt.Sprintf("At most %d connections may be pending per\n  source address and %d in all", defaultMaxPendingPerSource, defaultMaxPending)},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%s does not say %q", c.file, c.want)
		}
	}
}
