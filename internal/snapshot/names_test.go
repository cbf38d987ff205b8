package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/testutil"
)

// deep is a name of n components below sys/.
func deep(n int) string { return "sys/" + strings.TrimSuffix(strings.Repeat("a/", n), "/") }

// TestNameBounds: a name longer than MaxNameLen or deeper than MaxDepth
// is refused before anything of it reaches the disk, in one line naming
// the limit. A 216-byte archive holding one name of 32 K components took
// 2.3 s to open (a directory per component, a hash per prefix); at 1 MiB
// names, hours. The longest names real trees need pass.
func TestNameBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"32 K components", snap(dir(deep(32 << 10))), "over the limit of 1024"},
		{"one too deep", snap(dir(deep(MaxDepth))), fmt.Sprintf("%d directories deep, over the limit of %d", MaxDepth+1, MaxDepth)},
		{"a long name", snap(file("sys/"+strings.Repeat("x", MaxNameLen), "1")), "over the limit of 1024"},
		{"a long target", snap(link("sys/l", strings.Repeat("x", MaxNameLen+1))), "a target of 1025 bytes"},
	} {
		err := openBytes(t, c.data, defaultLimits())
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := openBytes(t, snap(dir(deep(MaxDepth-1))), defaultLimits()); err != nil {
		t.Errorf("a name %d deep: %v", MaxDepth, err)
	}
	sysfs := "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:01.0/0000:03:00.0/0000:04:00.0/net/eth0/queues/rx-0/rps_cpus"
	if err := openBytes(t, snap(file(sysfs, "0\n")), defaultLimits()); err != nil {
		t.Errorf("a deep sysfs path: %v", err)
	}
}

// TestImpliedDirsCounted: the directories a name implies count against
// the entry limit, as the directories Open makes for them.
func TestImpliedDirsCounted(t *testing.T) {
	l := fuzzLimits()
	l.entries = 20
	err := openBytes(t, snap(file(deep(30)+"/f", "1")), l)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "directories their names imply") {
		t.Errorf("one entry implying 31 directories under a limit of %d: %v", l.entries, err)
	}
	if err := openBytes(t, snap(file(deep(10)+"/f", "1")), l); err != nil {
		t.Errorf("one entry implying 11 directories: %v", err)
	}
}

// TestTreeAddLinear: recording a name costs work in proportion to what
// it adds, not its depth times its length: a thousand siblings at the
// deepest level cost about what a thousand shallow ones do (the prefix of
// each was hashed again per component). Measured in thread CPU time,
// compared at the same moment.
func TestTreeAddLinear(t *testing.T) {
	add := func(base string) func() {
		return func() {
			tr := newTree(0)
			for i := range 1000 {
				if err := tr.add(fmt.Sprintf("%s/f%d", base, i), kindFile, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	long := "sys/" + strings.Repeat("abcdefghijklmnopqrstu/", MaxDepth-3)
	long = long[:min(len(long), MaxNameLen-10)]
	long = strings.TrimSuffix(long[:strings.LastIndexByte(long, '/')], "/")
	var shallow, deepT float64
	for range 3 {
		shallow += testutil.ThreadCPU(add("sys/x")).Seconds()
		deepT += testutil.ThreadCPU(add(long)).Seconds()
	}
	t.Logf("1000 names at depth 2: %.2f ms; at depth %d (%d bytes): %.2f ms", shallow/3*1e3, strings.Count(long, "/")+1, len(long), deepT/3*1e3)
	if shallow > 0 && deepT > 20*shallow {
		t.Errorf("deep names cost %.1fx shallow ones", deepT/shallow)
	}
}
