// Package cpulist parses and formats the kernel's CPU list and CPU mask
// notations: "0-3,8,10-11" (Documentation/admin-guide/cputopology.rst,
// *_list files, taskset -c) and "ff,ffffffff" (smp_affinity, local_cpus).
//
// Hand-written: no library reads both notations with a bound on the CPU
// number, and an unbounded range such as "0-4294967295" in a hostile
// snapshot must not allocate gigabytes.
package cpulist

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number accepted. The kernel's NR_CPUS tops out
// at 8192 on the largest configurations.
const MaxCPU = 8191

// ErrSyntax reports a list or mask that does not follow the kernel's notation.
var ErrSyntax = errors.New("invalid CPU list")

// MaxListLen bounds the text Parse reads. sysfs serves a list in one
// page; the longest list of MaxCPU+1 CPUs ("0,2,4,…,8190") is 20 KB.
const MaxListLen = 64 << 10

// maxExpand bounds the CPUs Parse expands, repeats included, over a whole
// list: a list the kernel writes names each CPU once, MaxCPU+1 at most.
// Without it "0-8191,0-8191,…" costs 8192 steps per 7 bytes.
const maxExpand = 4 * (MaxCPU + 1)

// Parse reads a CPU list such as "0-3,8,10-11" or "0-15:2" (range with a
// stride, as taskset and isolcpus accept). Whitespace around the list and
// its items is ignored; an empty list gives an empty, non-nil slice. The
// result is sorted and free of duplicates. A list longer than MaxListLen,
// or whose ranges together name more than four times MaxCPU+1 CPUs, is
// refused: both bound the work one list costs.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	cpus := []int{}
	if s == "" {
		return cpus, nil
	}
	if len(s) > MaxListLen {
		return nil, fmt.Errorf("%w: a list of %d bytes is longer than the %d bytes any CPU list needs", ErrSyntax, len(s), MaxListLen)
	}
	var seen [(MaxCPU + 64) / 64]uint64
	budget := maxExpand
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, stride, err := parseItem(item)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrSyntax, short(s), err)
		}
		if budget -= (hi-lo)/stride + 1; budget < 0 {
			return nil, fmt.Errorf("%w: the list's ranges name more than %d CPUs, repeats included (a list the kernel writes names each CPU once)", ErrSyntax, maxExpand)
		}
		for c := lo; c <= hi; c += stride {
			if seen[c/64]&(1<<(c%64)) == 0 {
				seen[c/64] |= 1 << (c % 64)
				cpus = append(cpus, c)
			}
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}

// short cuts a long list down for an error message.
func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// MustParse is Parse for constant lists in tests and tables; it panics on
// a malformed list.
func MustParse(s string) []int {
	c, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

func parseItem(item string) (lo, hi, stride int, err error) {
	if item == "" {
		return 0, 0, 0, errors.New("empty item")
	}
	stride = 1
	if r, st, ok := strings.Cut(item, ":"); ok {
		item = r
		if stride, err = parseCPU(st); err != nil || stride == 0 {
			return 0, 0, 0, fmt.Errorf("bad stride %q", st)
		}
	}
	a, b, isRange := strings.Cut(item, "-")
	if lo, err = parseCPU(a); err != nil {
		return 0, 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parseCPU(b); err != nil {
			return 0, 0, 0, err
		}
		if hi < lo {
			return 0, 0, 0, fmt.Errorf("range %q runs backwards", item)
		}
	}
	return lo, hi, stride, nil
}

func parseCPU(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad CPU number %q", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d above the limit of %d", n, MaxCPU)
	}
	return n, nil
}

// Format writes CPUs in the kernel's list notation, folding runs into
// ranges: [0 1 2 3 8] gives "0-3,8". The input need not be sorted.
func Format(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	c := slices.Clone(cpus)
	slices.Sort(c)
	c = slices.Compact(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Phrase names CPUs in a sentence, singular or plural: "CPU 3",
// "CPUs 2-3". IsAre is the verb that agrees with it.
func Phrase(cpus []int) string {
	if n := len(slices.Compact(slices.Sorted(slices.Values(cpus)))); n == 1 {
		return "CPU " + Format(cpus)
	}
	return "CPUs " + Format(cpus)
}

// IsAre returns "is" for one CPU and "are" for more, to follow Phrase.
func IsAre(cpus []int) string {
	if len(slices.Compact(slices.Sorted(slices.Values(cpus)))) == 1 {
		return "is"
	}
	return "are"
}

// ParseMask reads a hexadecimal CPU mask as the kernel prints it in
// smp_affinity and local_cpus: 32-bit words separated by commas, most
// significant first ("00000000,00000f00"). A leading "0x" is accepted.
func ParseMask(s string) ([]int, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "0x")
	if s == "" {
		return nil, fmt.Errorf("%w: empty mask", ErrSyntax)
	}
	hex := strings.ReplaceAll(s, ",", "")
	if len(hex) > (MaxCPU+1)/4 {
		return nil, fmt.Errorf("%w: mask of %d hex digits is longer than %d CPUs", ErrSyntax, len(hex), MaxCPU+1)
	}
	cpus := []int{}
	for i := len(hex) - 1; i >= 0; i-- {
		v, ok := hexDigit(hex[i])
		if !ok {
			return nil, fmt.Errorf("%w: bad mask %q", ErrSyntax, s)
		}
		base := (len(hex) - 1 - i) * 4
		for bit := range 4 {
			if v&(1<<bit) != 0 {
				cpus = append(cpus, base+bit)
			}
		}
	}
	return cpus, nil
}

// FormatMask writes CPUs as a kernel hex mask in 32-bit words ("f00" is
// written "00000f00"), suitable for /proc/irq/N/smp_affinity.
func FormatMask(cpus []int) string {
	maxCPU := 0
	for _, c := range cpus {
		maxCPU = max(maxCPU, c)
	}
	words := make([]uint32, maxCPU/32+1)
	for _, c := range cpus {
		if c >= 0 {
			words[c/32] |= 1 << (c % 32)
		}
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}

func hexDigit(b byte) (int, bool) {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0'), true
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10, true
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10, true
	}
	return 0, false
}

// Contains reports whether sorted list cpus holds cpu.
func Contains(cpus []int, cpu int) bool {
	_, ok := slices.BinarySearch(cpus, cpu)
	return ok
}

// Intersect returns the CPUs present in both sorted lists.
func Intersect(a, b []int) []int {
	out := []int{}
	for _, c := range a {
		if Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}

// Subtract returns the CPUs of sorted list a that are not in sorted list b.
func Subtract(a, b []int) []int {
	out := []int{}
	for _, c := range a {
		if !Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}
