package hostfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// MaxSoftirqsSize bounds /proc/softirqs: ten lines of one count per CPU.
const MaxSoftirqsSize = 16 << 20

// Softirqs is /proc/softirqs: how many times each softirq ran on each CPU
// since boot.
type Softirqs struct {
	CPUs []int // the CPU numbers of the columns, in order
	// Counts maps a softirq name as the kernel prints it ("NET_RX",
	// "NET_TX", "TIMER", …) to its count on each CPU, by CPU number.
	Counts map[string]map[int]uint64
}

// Softirqs reads /proc/softirqs.
func (fs *FS) Softirqs() (*Softirqs, error) {
	r, err := fs.Open("proc/softirqs", MaxSoftirqsSize)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s, err := ParseSoftirqs(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Display("proc/softirqs"), err)
	}
	return s, nil
}

// ParseSoftirqs parses /proc/softirqs text.
//
// Hand-written rather than prometheus/procfs's FS.Softirqs: that one
// drops the header, so its per-CPU slices are indexed by column, which is
// not the CPU number once a CPU is offline (the kernel prints only online
// CPUs), and it knows a fixed list of names.
func ParseSoftirqs(r io.Reader) (*Softirqs, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // 8,192 CPUs × 11 bytes
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: empty file", ErrParse)
	}
	cpus, err := parseInterruptsHeader(sc.Text()) // the same "CPU0 CPU1 …" header
	if err != nil {
		return nil, err
	}
	s := &Softirqs{CPUs: cpus, Counts: map[string]map[int]uint64{}}
	for sc.Scan() {
		name, counts, err := parseSoftirqLine(sc.Bytes(), cpus)
		if err != nil {
			return nil, err
		}
		if name != "" {
			s.Counts[name] = counts
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	return s, nil
}

// parseSoftirqLine reads "      NET_RX:    1940424    1536993".
func parseSoftirqLine(line []byte, cpus []int) (string, map[int]uint64, error) {
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return "", nil, nil
	}
	name, ok := bytes.CutSuffix(fields[0], []byte(":"))
	if !ok || len(name) == 0 {
		return "", nil, fmt.Errorf("%w: line %q has no NAME: label", ErrParse, short(string(line)))
	}
	if len(fields)-1 > len(cpus) {
		return "", nil, fmt.Errorf("%w: %s has %d counts for %d CPUs", ErrParse, name, len(fields)-1, len(cpus))
	}
	counts := make(map[int]uint64, len(cpus))
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %s count %q", ErrParse, name, short(string(f)))
		}
		counts[cpus[i]] = v
	}
	return string(name), counts, nil
}
