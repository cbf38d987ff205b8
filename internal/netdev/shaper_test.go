package netdev

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func readFacts(t *testing.T, name string) *Facts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// shaperCase is what Link.Shaper should find on one interface; an empty
// kind means nothing caps it.
type shaperCase struct {
	kind, handle string
	rate         uint64
	perFlow      bool
	overhead     *int
	detail       string
}

func checkShapers(t *testing.T, f *Facts, want map[string]shaperCase) {
	t.Helper()
	for name, w := range want {
		l, ok := f.Links[name]
		if !ok {
			t.Errorf("%s: not in the facts", name)
			continue
		}
		s := l.Shaper()
		if w.kind == "" {
			if s != nil {
				t.Errorf("%s: shaper %+v; want none", name, *s)
			}
			continue
		}
		if s == nil {
			t.Errorf("%s: no shaper; want %s %s at %d", name, w.kind, w.handle, w.rate)
			continue
		}
		if s.Kind != w.kind || s.Handle != w.handle || s.RateBitsPerSec != w.rate || s.PerFlow != w.perFlow || s.Detail != w.detail {
			t.Errorf("%s: shaper %+v;\nwant %+v", name, *s, w)
		}
		if (s.OverheadBytes == nil) != (w.overhead == nil) || s.OverheadBytes != nil && *s.OverheadBytes != *w.overhead {
			t.Errorf("%s: overhead %v; want %v", name, s.OverheadBytes, w.overhead)
		}
	}
}

// TestShaperCaptured finds the shapers of the trees tc built in a real
// namespace (testdata/live-shapers.sh).
func TestShaperCaptured(t *testing.T) {
	f := readFacts(t, "live-shapers.json")
	checkShapers(t, f, map[string]shaperCase{
		"tbf0": {kind: "tbf", handle: "1:", rate: 1e9, detail: "tbf 1: rate 1gbit"},
		// 1:10 (ceil 1gbit) under 1:1 (ceil 2gbit): the leaf's ceil binds.
		"htb0": {kind: "htb", handle: "1:10", rate: 1e9, detail: "htb class 1:10 ceil 1gbit (the default class of htb 1:)"},
		// No default class: htb sends unclassified traffic unshaped.
		"htb1": {},
		// The default class allows 5gbit; the tbf inside it 300mbit.
		"htb2": {kind: "tbf", handle: "10:", rate: 300e6, detail: "tbf 10: rate 300mbit"},
		// The default class 1:1 has a child: not a leaf, so direct.
		"htb3": {},
		"mq0":  {kind: "tbf", handle: "1:", rate: 4e9, detail: "mq 1: with tbf on each of its 2 queues, 4gbit in all"},
		// One queue of two unshaped: the link is not capped.
		"mq1":    {},
		"lab0":   {kind: "tbf", handle: "1:", rate: 10e9, detail: "tbf 1: rate 10gbit"},
		"plain0": {},
		"lo":     {},
		"htb0p":  {},
	})
	// The summary keeps the root's kind and the link's cap, as older
	// snapshots had it.
	for name, want := range map[string]uint64{"tbf0": 1e9, "htb0": 1e9, "htb1": 0, "htb2": 300e6, "mq0": 4e9, "mq1": 0} {
		if q := f.Links[name].Qdisc; q == nil || q.RateBitsPerSec != want {
			t.Errorf("%s: summary %+v; want rate %d", name, q, want)
		}
	}
	// clsact is ingress: not among the egress qdiscs.
	for _, q := range f.Links["lab0"].Qdiscs {
		if q.Kind == "clsact" || q.Parent == "ingress" {
			t.Errorf("lab0 lists %+v", q)
		}
	}
	for name, l := range f.Links {
		if l.DefaultRoute != (name == "tbf0") {
			t.Errorf("%s: default route %v", name, l.DefaultRoute)
		}
		bps, ok := DeclaredLineRate(l.Alias)
		if ok != (name == "lab0") || ok && bps != 10e9 {
			t.Errorf("%s: alias %q declares %d, %v", name, l.Alias, bps, ok)
		}
	}
}

// TestShaperFqCake: fq's maxrate caps each flow; cake's bandwidth caps
// the link, with its overhead when it compensates for one.
func TestShaperFqCake(t *testing.T) {
	thirtyEight := 38
	checkShapers(t, readFacts(t, "live-fq-cake.json"), map[string]shaperCase{
		"fq0": {kind: "fq", handle: "8001:", rate: 2e9, perFlow: true, detail: "fq 8001: maxrate 2gbit (each flow)"},
		"fq1": {},
		// A flow uses one queue: the highest maxrate is what one can get.
		"mqfq0": {kind: "fq", handle: "1:", rate: 8e9, perFlow: true, detail: "mq 1: with fq maxrate on each of its 2 queues, each flow at most 8gbit"},
		// A per-flow cap on one queue and a link cap on the other add up
		// to neither.
		"mqmix0": {},
		"cake0":  {kind: "cake", handle: "8006:", rate: 3e9, detail: "cake 8006: bandwidth 3gbit"},
		"cake1":  {kind: "cake", handle: "8007:", rate: 3e9, overhead: &thirtyEight, detail: "cake 8007: bandwidth 3gbit"},
		"cake2":  {},
	})
}

// TestShaperLegacy reads a snapshot from before the tree: the root's
// rate is the cap.
func TestShaperLegacy(t *testing.T) {
	checkShapers(t, readFacts(t, "live-legacy.json"), map[string]shaperCase{
		"lab0": {kind: "tbf", handle: "root", rate: 25e9, detail: "tbf at 25gbit"},
		"eth0": {},
		"lo":   {},
	})
}

// TestShaperHostile: loops and deep nesting a snapshot could hold end the
// walk; they neither hang nor panic.
func TestShaperHostile(t *testing.T) {
	loop := Link{
		Qdiscs:  []Qdisc{{Kind: "htb", Handle: "1:", Parent: "root", DefaultClass: "1:10"}},
		Classes: []Class{{Kind: "htb", Handle: "1:10", Parent: "1:20", CeilBitsPerSec: 5e9}, {Kind: "htb", Handle: "1:20", Parent: "1:10", CeilBitsPerSec: 2e9}},
	}
	// 1:10 is a child of 1:20 and the other way round: each is the
	// other's child, so the default class is no leaf.
	if s := loop.Shaper(); s != nil {
		t.Errorf("class loop: %+v", *s)
	}
	self := Link{
		Qdiscs:  []Qdisc{{Kind: "htb", Handle: "1:", Parent: "root", DefaultClass: "1:10"}},
		Classes: []Class{{Kind: "htb", Handle: "1:10", Parent: "1:10", CeilBitsPerSec: 5e9}},
	}
	if s := self.Shaper(); s == nil || s.RateBitsPerSec != 5e9 {
		t.Errorf("a class its own parent: %+v", s)
	}
	// tbf under tbf under tbf …, deeper than the walk goes: the caps it
	// reaches are kept, the rest unseen.
	var deep Link
	for i := 1; i <= 20; i++ {
		parent := "root"
		if i > 1 {
			parent = HandleString(uint32(i-1)<<16 | 1)
		}
		deep.Qdiscs = append(deep.Qdiscs, Qdisc{Kind: "tbf", Handle: HandleString(uint32(i) << 16), Parent: parent, RateBitsPerSec: uint64(21-i) * 1e9})
	}
	if s := deep.Shaper(); s == nil || s.RateBitsPerSec != 12e9 {
		t.Errorf("deep tbf chain: %+v; want the 9th level's 12gbit", s)
	}
	// A tbf whose child is itself.
	cyc := Link{Qdiscs: []Qdisc{{Kind: "tbf", Handle: "1:", Parent: "root", RateBitsPerSec: 1e9}, {Kind: "tbf", Handle: "1:", Parent: "1:1", RateBitsPerSec: 2e9}}}
	if s := cyc.Shaper(); s == nil || s.RateBitsPerSec != 1e9 {
		t.Errorf("tbf cycle: %+v", s)
	}
	for _, h := range []string{"", ":", "zz:", "10000:", "1", "root"} {
		bad := Link{Qdiscs: []Qdisc{{Kind: "mq", Handle: h, Parent: "root"}, {Kind: "tbf", Handle: "2:", Parent: h + "1", RateBitsPerSec: 1}}}
		if s := bad.Shaper(); s != nil {
			t.Errorf("mq with handle %q: %+v", h, *s)
		}
	}
}

func TestHandleString(t *testing.T) {
	for h, want := range map[uint32]string{0xffffffff: "root", 0xfffffff1: "ingress", 0: "0:", 0x10000: "1:", 0x10010: "1:10", 0x8001000a: "8001:a"} {
		if got := HandleString(h); got != want {
			t.Errorf("HandleString(%#x) = %q; want %q", h, got, want)
		}
	}
}

func TestRateString(t *testing.T) {
	for bps, want := range map[uint64]string{10e9: "10gbit", 2.5e9: "2.5gbit", 400e6: "400mbit", 1e12: "1tbit", 64e3: "64kbit", 999: "999bit"} {
		if got := RateString(bps); got != want {
			t.Errorf("RateString(%d) = %q; want %q", bps, got, want)
		}
	}
}

func TestDeclaredLineRate(t *testing.T) {
	a := DeclareLineRate(25e9)
	if bps, ok := DeclaredLineRate(a); !ok || bps != 25e9 {
		t.Errorf("%q reads back as %d, %v", a, bps, ok)
	}
	for _, s := range []string{"", "uplink to spine 3", strings.Replace(a, "25000000000", "0", 1), strings.Replace(a, "25000000000", "-5", 1),
		strings.Replace(a, "25000000000", "25gbit", 1), strings.TrimSuffix(a, " rate"), "x" + a} {
		if bps, ok := DeclaredLineRate(s); ok {
			t.Errorf("%q declares %d", s, bps)
		}
	}
}

// routeAttr encodes one netlink attribute as the kernel sends it.
func routeAttr(typ uint16, value []byte) []byte {
	l := syscall.SizeofRtAttr + len(value)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:2], uint16(l))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	copy(b[4:], value)
	return b
}

func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// cakeOptions builds cake's TCA_OPTIONS as cake_dump writes them: the
// bandwidth, the overhead always, the raw flag without compensation.
func cakeOptions(bytesPerSec uint64, overhead int32, raw bool) []byte {
	b := append(routeAttr(tcaCakeBaseRate64, u64(bytesPerSec)), routeAttr(tcaCakeOverhead, u32(uint32(overhead)))...)
	b = append(b, routeAttr(3, u32(0))...) // TCA_CAKE_DIFFSERV_MODE, not read
	if raw {
		b = append(b, routeAttr(tcaCakeRaw, u32(0))...)
	}
	return b
}

func TestParseCake(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     []byte
		rate     uint64
		overhead *int
		err      bool
	}{
		{"bandwidth 3gbit, raw", cakeOptions(375e6, 0, true), 3e9, nil, false},
		{"ethernet (overhead 38)", cakeOptions(375e6, 38, false), 3e9, ptr(38), false},
		{"overhead 0: the IP packet alone", cakeOptions(125e6, 0, false), 1e9, ptr(0), false},
		{"negative overhead", cakeOptions(125e6, -4, false), 1e9, ptr(-4), false},
		{"unlimited", cakeOptions(0, 0, true), 0, nil, false},
		{"short bandwidth", routeAttr(tcaCakeBaseRate64, u32(1)), 0, nil, true},
		{"short overhead", routeAttr(tcaCakeOverhead, []byte{1}), 0, nil, true},
		{"absurd bandwidth", routeAttr(tcaCakeBaseRate64, u64(1<<62)), 0, nil, true},
		{"truncated attribute", cakeOptions(375e6, 0, true)[:6], 0, nil, true},
		{"nothing", nil, 0, nil, false},
	} {
		rate, ov, err := parseCake(tt.opts)
		if (err != nil) != tt.err {
			t.Errorf("%s: error %v; want error %v", tt.name, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		if rate != tt.rate || (ov == nil) != (tt.overhead == nil) || ov != nil && *ov != *tt.overhead {
			t.Errorf("%s: %d, %v; want %d, %v", tt.name, rate, ov, tt.rate, tt.overhead)
		}
	}
}

func ptr(v int) *int { return &v }

func FuzzParseCake(f *testing.F) {
	f.Add(cakeOptions(375e6, 38, false))
	f.Add(cakeOptions(0, 0, true))
	f.Add([]byte{4, 0, 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rate, _, err := parseCake(b)
		if err == nil && rate > 1<<64-8 {
			t.Errorf("rate %d", rate)
		}
	})
}

// FuzzParse feeds Parse and every link's Shaper what a snapshot could
// hold: neither panics, and a shaper found has a rate.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"live-shapers.json", "live-fq-cake.json", "live-legacy.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"links":{"x":{"qdiscs":[{"kind":"htb","handle":"1:","parent":"root","default_class":"1:1"}],"classes":[{"kind":"htb","handle":"1:1","parent":"1:1","ceil_bits_per_sec":1}]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		facts, err := Parse(b)
		if err != nil {
			return
		}
		for _, l := range facts.Links {
			if s := l.Shaper(); s != nil && s.RateBitsPerSec == 0 {
				t.Errorf("shaper without a rate: %+v", *s)
			}
			DeclaredLineRate(l.Alias)
		}
	})
}

// TestParseAttrs: lengths short of the header or past the buffer are
// errors, a missing last padding is not, the flag bits are masked off.
func TestParseAttrs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		b     []byte
		types []uint16
		err   bool
	}{
		{"two", append(routeAttr(2, u64(1)), routeAttr(6, u32(38))...), []uint16{2, 6}, false},
		{"unpadded last", []byte{5, 0, 12, 0, 'x'}, []uint16{12}, false},
		{"nested flag", []byte{4, 0, 2, 0x80}, []uint16{2}, false},
		{"short length", []byte{3, 0, 2, 0}, nil, true},
		{"past the buffer", []byte{12, 0, 2, 0, 0, 0}, nil, true},
		{"trailing bytes", []byte{4, 0, 2, 0, 9}, []uint16{2}, false},
		{"empty", nil, nil, false},
	} {
		got, err := parseAttrs(tt.b)
		if (err != nil) != tt.err {
			t.Errorf("%s: error %v", tt.name, err)
			continue
		}
		var types []uint16
		for _, a := range got {
			types = append(types, a.typ)
		}
		if !slices.Equal(types, tt.types) {
			t.Errorf("%s: types %v; want %v", tt.name, types, tt.types)
		}
	}
	many := bytes.Repeat([]byte{4, 0, 1, 0}, maxAttrs+1)
	if _, err := parseAttrs(many); err == nil {
		t.Errorf("%d attributes read", maxAttrs+1)
	}
}
