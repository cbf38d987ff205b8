package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vmStat is /proc/stat of a 2-CPU KVM guest (kernel 6.18), its intr line
// shortened.
const vmStat = `cpu  83195 0 117532 2190213 3986 0 6582 2448 0 0
cpu0 38839 0 55567 1101363 1333 0 2659 1254 0 0
cpu1 44355 0 61965 1088849 2653 0 3922 1194 0 0
intr 9953079 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 14 0 0
ctxt 19440262
btime 1795322430
processes 36853
procs_running 3
procs_blocked 0
softirq 9002805 0 235354 539145 3477417 1260574 0 130139 357046 1825331 1177799
`

func TestParseCPUStat(t *testing.T) {
	st, err := ParseCPUStat(strings.NewReader(vmStat))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{User: 44355, System: 61965, Idle: 1088849, IOWait: 2653, SoftIRQ: 3922, Steal: 1194}
	if st.PerCPU[1] != want {
		t.Errorf("cpu1 = %+v, want %+v", st.PerCPU[1], want)
	}
	if len(st.PerCPU) != 2 || st.All.User != 83195 {
		t.Errorf("PerCPU = %v, All = %+v", st.PerCPU, st.All)
	}
	if got := want.Total(); got != 44355+61965+1088849+2653+3922+1194 {
		t.Errorf("Total = %d", got)
	}
	if got := want.Busy(); got != 44355+61965+3922+1194 {
		t.Errorf("Busy = %d", got)
	}
}

// An offline CPU has no line, and old kernels print fewer columns.
func TestParseCPUStatOfflineAndOld(t *testing.T) {
	in := "cpu  10 0 10 100\ncpu0 5 0 5 50\ncpu2 5 0 5 50\npage 1 2\n"
	st, err := ParseCPUStat(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.PerCPU[1]; ok || st.PerCPU[2].Idle != 50 {
		t.Errorf("PerCPU = %+v", st.PerCPU)
	}
}

// The scan stops at the first line that is not a cpu line, so a huge intr
// line (a host with many IRQs) costs nothing.
func TestParseCPUStatHugeIntr(t *testing.T) {
	in := "cpu 1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr " + strings.Repeat("0 ", 200000) + "\n"
	if _, err := ParseCPUStat(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
}

func TestParseCPUStatRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"intr 1 2\n",
		"cpu 1 2 x 4\n",
		"cpu 1 2\n",
		"cpu 1 2 3 4\ncpuX 1 2 3 4\n",
		"cpu 1 2 3 4\ncpu-1 1 2 3 4\n",
	} {
		if _, err := ParseCPUStat(strings.NewReader(in)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err = %v, want ErrParse", in, err)
		}
	}
}

func TestCPUStatLiveAndTree(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err == nil {
		st, err := Live().CPUStat()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.PerCPU) == 0 || st.All.Total() == 0 {
			t.Errorf("live /proc/stat: %+v", st)
		}
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/stat"), []byte(vmStat), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	st, err := fs.CPUStat()
	if err != nil {
		t.Fatal(err)
	}
	if st.PerCPU[0].System != 55567 {
		t.Errorf("cpu0 = %+v", st.PerCPU[0])
	}
}

func BenchmarkParseCPUStat(b *testing.B) {
	for b.Loop() {
		if _, err := ParseCPUStat(strings.NewReader(vmStat)); err != nil {
			b.Fatal(err)
		}
	}
}
