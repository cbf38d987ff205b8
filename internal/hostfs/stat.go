package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// MaxStatSize bounds /proc/stat. Its "intr" line holds one count per IRQ
// number (about 11 bytes each); 64 MiB covers millions of IRQs.
const MaxStatSize = 64 << 20

// CPUTimes is one "cpu" line of /proc/stat: time spent in each state since
// boot, in clock ticks (USER_HZ, 100 per second on Linux). Guest time is
// already included in User and Nice, as the kernel counts it.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal, Guest, GuestNice uint64
}

// Total is the sum of the states a CPU can be in (guest time excluded: it
// is part of user time).
func (t CPUTimes) Total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.IOWait + t.IRQ + t.SoftIRQ + t.Steal
}

// Busy is the time not idle: Total minus idle and I/O wait.
func (t CPUTimes) Busy() uint64 { return t.Total() - t.Idle - t.IOWait }

// CPUStat is the CPU part of /proc/stat.
type CPUStat struct {
	All    CPUTimes         // the "cpu" line: every CPU summed
	PerCPU map[int]CPUTimes // the "cpuN" lines, by CPU number; offline CPUs are absent
}

// CPUStat reads the cpu lines of /proc/stat.
func (fs *FS) CPUStat() (*CPUStat, error) {
	r, err := fs.Open("proc/stat", MaxStatSize)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	st, err := ParseCPUStat(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Display("proc/stat"), err)
	}
	return st, nil
}

// ParseCPUStat parses the cpu lines at the top of /proc/stat text and
// stops at the first other line.
//
// Hand-written rather than prometheus/procfs's FS.Stat: that one parses
// the whole file, including the "intr" line with one number per IRQ (tens
// of thousands on a large host), and converts ticks to float seconds. The
// engine samples this file every 100 ms on both ends of a test and wants
// exact tick deltas, so this reads only what it needs.
func ParseCPUStat(r io.Reader) (*CPUStat, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10) // a cpu line is under 200 bytes
	st := &CPUStat{PerCPU: map[int]CPUTimes{}}
	seenAll := false
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("cpu")) {
			break // the cpu lines come first; the rest is not ours
		}
		cpu, t, err := parseCPULine(line)
		if err != nil {
			return nil, err
		}
		if cpu < 0 {
			st.All, seenAll = t, true
			continue
		}
		st.PerCPU[cpu] = t
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	if !seenAll {
		return nil, fmt.Errorf("%w: no \"cpu\" line", ErrParse)
	}
	return st, nil
}

// parseCPULine reads "cpu3 38839 0 55567 1101363 1333 0 2659 1254 0 0";
// cpu is -1 for the summary line. Kernels before 2.6.11 print fewer
// columns; missing ones stay zero.
func parseCPULine(line []byte) (int, CPUTimes, error) {
	fields := bytes.Fields(line)
	label := string(fields[0])
	cpu := -1
	if label != "cpu" {
		n, err := strconv.Atoi(label[3:])
		if err != nil || n < 0 {
			return 0, CPUTimes{}, fmt.Errorf("%w: cpu label %q", ErrParse, short(label))
		}
		cpu = n
	}
	var v [10]uint64
	if len(fields) < 5 {
		return 0, CPUTimes{}, fmt.Errorf("%w: %s has %d values, want at least 4", ErrParse, label, len(fields)-1)
	}
	for i, f := range fields[1:] {
		if i == len(v) {
			break // a future kernel's extra column
		}
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return 0, CPUTimes{}, fmt.Errorf("%w: %s value %q is not a count", ErrParse, label, short(string(f)))
		}
		v[i] = n
	}
	return cpu, CPUTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}, nil
}
