package cpulist

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/testutil"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"0", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{" 7-11 ", []int{7, 8, 9, 10, 11}},
		{"3,1,2,1", []int{1, 2, 3}},
		{"0-7:2", []int{0, 2, 4, 6}},
		{"8191", []int{8191}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"a", "1-", "-1", "3-1", "0-8192", "1,,2", "0-4294967295", "1:0", "0x3", "1-2-3"} {
		if _, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error = %v, want ErrSyntax", in, err)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{5}, "5"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{11, 10, 7, 9, 8, 8}, "7-11"},
		{[]int{0, 2, 4}, "0,2,4"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMask(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"800", []int{11}},
		{"00000000,00000f00", []int{8, 9, 10, 11}},
		{"1,00000001", []int{0, 32}},
		{"0xff", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"0", []int{}},
	}
	for _, tt := range tests {
		got, err := ParseMask(tt.in)
		if err != nil {
			t.Errorf("ParseMask(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseMask(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := FormatMask([]int{11}); got != "00000800" {
		t.Errorf("FormatMask([11]) = %q", got)
	}
	if got := FormatMask([]int{0, 32}); got != "00000001,00000001" {
		t.Errorf("FormatMask([0 32]) = %q", got)
	}
	for _, bad := range []string{"", "xyz", "12g4"} {
		if _, err := ParseMask(bad); err == nil {
			t.Errorf("ParseMask(%q) succeeded", bad)
		}
	}
}

func TestSetOps(t *testing.T) {
	a, b := MustParse("0-5"), MustParse("4-9")
	if got := Intersect(a, b); !slices.Equal(got, []int{4, 5}) {
		t.Errorf("Intersect = %v", got)
	}
	if got := Subtract(a, b); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("Subtract = %v", got)
	}
}

// FuzzParse checks that any input either fails cleanly or round-trips
// through Format to the same set, within the CPU bound.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0-3,8,10-11", "", "0-7:2", "8191", "0-4294967295", "1,,2", " 5 ", strings.Repeat("0-8191,", 9000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var cpus []int
		var err error
		// A work budget, in the parsing thread's CPU time: the hostile
		// lists of 64 KiB once cost half a second each.
		if cpu := testutil.ThreadCPU(func() { cpus, err = Parse(s) }); cpu > 50*time.Millisecond {
			t.Fatalf("Parse of %d bytes took %v of CPU", len(s), cpu)
		}
		if err != nil {
			return
		}
		for _, c := range cpus {
			if c < 0 || c > MaxCPU {
				t.Fatalf("Parse(%q) gave CPU %d outside bounds", s, c)
			}
		}
		again, err := Parse(Format(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

// FuzzParseMask checks masks never panic and round-trip through FormatMask.
func FuzzParseMask(f *testing.F) {
	for _, s := range []string{"ff", "00000000,00000f00", "0x1", "", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseMask(s)
		if err != nil || len(cpus) == 0 {
			return
		}
		again, err := ParseMask(FormatMask(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

func TestPhrase(t *testing.T) {
	for _, tt := range []struct {
		cpus []int
		want string
	}{
		{[]int{3}, "CPU 3 is"},
		{[]int{3, 3}, "CPU 3 is"},
		{[]int{2, 3}, "CPUs 2-3 are"},
		{[]int{12, 14}, "CPUs 12,14 are"},
	} {
		if got := Phrase(tt.cpus) + " " + IsAre(tt.cpus); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.cpus, got, tt.want)
		}
	}
}

// TestParseWorkBounded: a list that names the same CPUs over and over
// ("0-8191" repeated, 7 bytes for 8192 steps) is refused once its ranges
// pass four times the CPUs a host can have, and a longer text than any
// CPU list needs is refused unread; the kernel's own longest lists pass.
func TestParseWorkBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		s    string
		ok   bool
	}{
		{"every CPU", "0-8191", true},
		{"every other CPU", Format(evens()), true},
		{"four times over", "0-8191,0-8191,0-8191,0-8191", true},
		{"five times over", "0-8191,0-8191,0-8191,0-8191,0", false},
		{"64 KiB of repeats", strings.TrimSuffix(strings.Repeat("0-8191,", MaxListLen/7), ","), false},
		{"over 64 KiB", strings.Repeat("1,", MaxListLen/2+1), false},
	} {
		var err error
		cpu := testutil.ThreadCPU(func() { _, err = Parse(c.s) })
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: %v", c.name, err)
		}
		t.Logf("%s (%d bytes): %v of CPU", c.name, len(c.s), cpu)
	}
}

func evens() []int {
	var out []int
	for c := 0; c <= MaxCPU; c += 2 {
		out = append(out, c)
	}
	return out
}
