package bench

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
)

// TestPerftestNeedsRDMA: without an RDMA device the perftest driver says
// so in one line, whether perftest is installed or not.
func TestPerftestNeedsRDMA(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(root+"/sys/class/infiniband", 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	err = (&Perftest{FS: fs}).Check()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no RDMA device") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Check without an RDMA device: %v", err)
	}
}
