package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vmSoftirqs is /proc/softirqs of a 2-CPU KVM guest (kernel 6.18).
const vmSoftirqs = `                    CPU0       CPU1       
          HI:          0          0
       TIMER:     118583     116771
      NET_TX:     308597     230548
      NET_RX:    1940424    1536993
       BLOCK:          0    1260574
    IRQ_POLL:          0          0
     TASKLET:      72015      58124
       SCHED:     175307     181739
     HRTIMER:    1096130     729201
         RCU:     450016     727784
`

// offlineSoftirqs has CPU 1 offline: the kernel prints online CPUs only.
const offlineSoftirqs = `                    CPU0       CPU2       CPU3
      NET_TX:          1          2          3
      NET_RX:         10         20         30
`

func TestParseSoftirqs(t *testing.T) {
	s, err := ParseSoftirqs(strings.NewReader(vmSoftirqs))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.CPUs) != 2 || len(s.Counts) != 10 {
		t.Fatalf("CPUs %v, %d names", s.CPUs, len(s.Counts))
	}
	if s.Counts["NET_RX"][1] != 1536993 || s.Counts["NET_TX"][0] != 308597 {
		t.Errorf("NET_RX = %v, NET_TX = %v", s.Counts["NET_RX"], s.Counts["NET_TX"])
	}
	s, err = ParseSoftirqs(strings.NewReader(offlineSoftirqs))
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts["NET_RX"][2] != 20 || s.Counts["NET_RX"][3] != 30 {
		t.Errorf("offline CPU shifted the columns: %v", s.Counts["NET_RX"])
	}
	if _, ok := s.Counts["NET_RX"][1]; ok {
		t.Errorf("offline CPU 1 has a count: %v", s.Counts["NET_RX"])
	}
}

func TestParseSoftirqsRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"NET_RX: 1 2\n",
		"  CPU0\nNET_RX: 1 2\n",
		"  CPU0 CPU1\nNET_RX: 1 x\n",
		"  CPU0 CPU1\nNET_RX 1 2\n",
	} {
		if _, err := ParseSoftirqs(strings.NewReader(in)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err = %v, want ErrParse", in, err)
		}
	}
}

func TestSoftirqsLiveAndTree(t *testing.T) {
	if _, err := os.Stat("/proc/softirqs"); err == nil {
		s, err := Live().Softirqs()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Counts["NET_RX"]; !ok {
			t.Errorf("live /proc/softirqs has no NET_RX: %v", s.Counts)
		}
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/softirqs"), []byte(offlineSoftirqs), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	s, err := fs.Softirqs()
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts["NET_TX"][3] != 3 {
		t.Errorf("NET_TX = %v", s.Counts["NET_TX"])
	}
}
