package hostfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxInterruptsSize bounds /proc/interrupts. A host with 512 CPUs and
// 4,096 IRQs prints about 25 MB; 256 MiB is far beyond any real host.
const MaxInterruptsSize = 256 << 20

// MaxInterruptsLine bounds one line of /proc/interrupts: a line on 8,192
// CPUs is about 90 KB, so 1 MiB is far beyond any real host.
const MaxInterruptsLine = 1 << 20

// IRQCounts is one numbered line of /proc/interrupts.
type IRQCounts struct {
	IRQ    int
	Counts map[int]uint64 // CPU → interrupts served there; zero counts omitted
	Total  uint64
	Chip   string // "IR-PCI-MSIX-0000:01:00.0", "IO-APIC"
	HWIRQ  string // "1-edge"
	Name   string // "mlx5_comp0@pci:0000:01:00.0"; several actions joined by ", "
}

// Interrupts is the part of /proc/interrupts a caller asked for.
type Interrupts struct {
	CPUs []int             // the CPU numbers of the columns, in order
	IRQs map[int]IRQCounts // by IRQ number
}

// Interrupts reads /proc/interrupts, keeping the numbered IRQs for which
// keep returns true (all of them when keep is nil). Counting lines such as
// NMI and LOC are skipped.
//
// Hand-written rather than prometheus/procfs's Proc.Interrupts: that one
// needs a /proc/PID directory (absent from snapshots), keeps counts as
// strings and reads every line in full, which costs seconds on a host
// with thousands of IRQs; this one parses only the lines asked for.
func (fs *FS) Interrupts(keep func(irq int, name string) bool) (*Interrupts, error) {
	r, err := fs.Open("proc/interrupts", MaxInterruptsSize)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	in, err := ParseInterrupts(r, keep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Display("proc/interrupts"), err)
	}
	return in, nil
}

// ParseInterrupts parses /proc/interrupts text. keep sees each numbered
// IRQ and its name before the counts are parsed; nil keeps all.
func ParseInterrupts(r io.Reader, keep func(irq int, name string) bool) (*Interrupts, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxInterruptsLine)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, scanErr(err)
			}
			return nil, err
		}
		return nil, fmt.Errorf("%w: empty file", ErrParse)
	}
	cpus, err := parseInterruptsHeader(sc.Text())
	if err != nil {
		return nil, err
	}
	in := &Interrupts{CPUs: cpus, IRQs: map[int]IRQCounts{}}
	fields := make([][]byte, 0, len(cpus)) // reused: lines on big hosts have thousands of fields
	for sc.Scan() {
		line := sc.Bytes()
		irq, rest, ok := irqLabel(line)
		if !ok {
			continue // NMI, LOC, ERR and the other per-CPU event lines
		}
		var info string
		fields, info = splitCounts(fields[:0], rest, len(cpus))
		name := irqName(info)
		if keep != nil && !keep(irq, name) {
			continue
		}
		c, err := parseCounts(fields, cpus)
		if err != nil {
			return nil, fmt.Errorf("%w: IRQ %d: %v", ErrParse, irq, err)
		}
		c.IRQ, c.Name = irq, name
		c.Chip, c.HWIRQ = irqChip(info)
		in.IRQs[irq] = c
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(err)
	}
	return in, nil
}

// scanErr says in plain words what bufio.Scanner calls "token too long".
func scanErr(err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%w: a line is longer than %d MiB, the most one line may hold (a line on 8,192 CPUs is about 90 KB)", ErrParse, MaxInterruptsLine>>20)
	}
	return fmt.Errorf("%w: %v", ErrParse, err)
}

// parseInterruptsHeader reads "           CPU0       CPU1 …". Offline CPUs
// have no column, so the numbers are read rather than counted.
func parseInterruptsHeader(h string) ([]int, error) {
	var cpus []int
	seen := map[int]bool{}
	for f := range strings.FieldsSeq(h) {
		n, ok := strings.CutPrefix(f, "CPU")
		if !ok {
			return nil, fmt.Errorf("%w: header field %q is not CPUn", ErrParse, short(f))
		}
		c, err := strconv.Atoi(n)
		if err != nil || c < 0 {
			return nil, fmt.Errorf("%w: header field %q is not CPUn", ErrParse, short(f))
		}
		if seen[c] {
			// Two columns for one CPU would count one column over the other.
			return nil, fmt.Errorf("%w: header names CPU%d twice", ErrParse, c)
		}
		seen[c] = true
		cpus = append(cpus, c)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("%w: header names no CPU", ErrParse)
	}
	return cpus, nil
}

// irqLabel splits " 98:  0 0 …" into 98 and the rest.
func irqLabel(line []byte) (int, []byte, bool) {
	line = bytes.TrimLeft(line, " ")
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return 0, nil, false
	}
	n, err := strconv.Atoi(string(line[:i]))
	if err != nil || n < 0 {
		return 0, nil, false
	}
	return n, line[i+1:], true
}

// splitCounts appends up to n leading numeric fields to fields and returns
// them with the text after them. A line may carry fewer counts than CPUs
// (ERR, MIS), never more.
func splitCounts(fields [][]byte, rest []byte, n int) ([][]byte, string) {
	i := 0
	for len(fields) < n {
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		j := i
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == i || (j < len(rest) && rest[j] != ' ') {
			break // not a count: the chip name begins here
		}
		fields = append(fields, rest[i:j])
		i = j
	}
	return fields, strings.TrimSpace(string(rest[i:]))
}

func parseCounts(fields [][]byte, cpus []int) (IRQCounts, error) {
	c := IRQCounts{Counts: map[int]uint64{}}
	for k, f := range fields {
		if len(f) == 1 && f[0] == '0' {
			continue
		}
		v, ok := parseDecimal(f)
		if !ok {
			return c, fmt.Errorf("count %q is out of range", short(string(f)))
		}
		c.Counts[cpus[k]] = v
		c.Total += v
	}
	return c, nil
}

// irqChip returns the chip and hwirq fields that precede the name:
// "IR-PCI-MSIX-0000:01:00.0    0-edge      mlx5_async0@pci:…".
func irqChip(info string) (chip, hwirq string) {
	f := strings.Fields(info)
	if len(f) > 0 {
		chip = f[0]
	}
	if len(f) > 2 && isHWIRQ(f[1]) {
		hwirq = f[1]
	}
	return chip, hwirq
}

// irqName returns the action names: what follows the chip and hwirq
// fields. Kernels before 3.x fuse chip and type ("PCI-MSI-edge  eth0").
func irqName(info string) string {
	f := strings.Fields(info)
	switch {
	case len(f) == 0:
		return ""
	case len(f) > 2 && isHWIRQ(f[1]):
		return strings.Join(f[2:], " ")
	case len(f) > 1:
		return strings.Join(f[1:], " ")
	}
	return f[0]
}

func isHWIRQ(s string) bool {
	for _, t := range []string{"-edge", "-level", "-fasteoi", "-eoi", "-simple", "-percpu", "-bad"} {
		if strings.HasSuffix(s, t) {
			return true
		}
	}
	return false
}

// parseDecimal parses digits (splitCounts checked they are digits) into a
// uint64 without allocating, failing on overflow.
func parseDecimal(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
