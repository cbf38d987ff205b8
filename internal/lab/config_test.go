package lab

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"demo", "a", "0", "lab-1", "x-", "abcdefghij"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", ok, err)
		}
		if ns := Namespace(ok, A); len(ns) > 15 {
			t.Errorf("Namespace(%q) = %q is longer than an interface name", ok, ns)
		}
	}
	for _, bad := range []string{"", "Demo", "-x", "a_b", "a.b", "a/b", "x y", "abcdefghijk", "é", "../x"} {
		err := ValidateName(bad)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ValidateName(%q) error has several lines: %q", bad, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"10gbit": 10e9, "25G": 25e9, "400mbit": 400e6, "2.5gbit": 2.5e9,
		"100M": 100e6, "1tbit": 1e12, "10Gbit/s": 10e9, " 40g ": 40e9, "10 gbit": 10e9,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, wantMsg := range map[string]string{
		"":         "write a number and a unit",
		"gbit":     "write a number and a unit",
		"10":       "no unit",
		"10gbps":   "ambiguous",
		"10mbps":   "ambiguous",
		"10b":      "ambiguous",
		"10x":      "unknown unit",
		"1.2.3g":   "not a number",
		"0gbit":    "out of range",
		"100kbit":  "out of range",
		"11tbit":   "out of range",
		"-10gbit":  "write a number and a unit",
		"10gibit":  "unknown unit",
		"nangbit":  "write a number and a unit",
		"1e400g":   "unknown unit",
		"99999999": "no unit",
	} {
		_, err := ParseRate(in)
		if err == nil || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("ParseRate(%q) error = %v, want it to mention %q", in, err, wantMsg)
		}
	}
}

func TestRateString(t *testing.T) {
	for r, want := range map[Rate]string{
		10e9: "10gbit", 2.5e9: "2.5gbit", 400e6: "400mbit", 1e12: "1tbit", 1500: "1.5kbit", 999: "999bit",
	} {
		if got := r.String(); got != want {
			t.Errorf("Rate(%d).String() = %q, want %q", uint64(r), got, want)
		}
		if r >= minRate {
			if back, err := ParseRate(want); err != nil || back != r {
				t.Errorf("ParseRate(%q) = %v, %v; want %v", want, back, err, r)
			}
		}
	}
}

func TestSpec(t *testing.T) {
	defs := kernelDefaults()
	tests := []struct {
		c      Config
		mtu    [2]int
		rate   [2]Rate
		smallB bool
	}{
		{Config{Scenario: Healthy}, [2]int{9000, 9000}, [2]Rate{}, false},
		{Config{Scenario: Capped10G}, [2]int{9000, 9000}, [2]Rate{10e9, 10e9}, false},
		{Config{Scenario: Capped10G, Rate: 25e9}, [2]int{9000, 9000}, [2]Rate{25e9, 25e9}, false},
		{Config{Scenario: MTUMismatch}, [2]int{9000, 1500}, [2]Rate{}, false},
		{Config{Scenario: MTUMismatch, MTU: 4000}, [2]int{4000, 1500}, [2]Rate{}, false},
		{Config{Scenario: SmallBuffers, MTU: 1500, Rate: 1e9}, [2]int{1500, 1500}, [2]Rate{1e9, 1e9}, true},
		{Config{Scenario: Shaped}, [2]int{9000, 9000}, [2]Rate{2e9, 0}, false},
		{Config{Scenario: Shaped, Rate: 5e9}, [2]int{9000, 9000}, [2]Rate{5e9, 0}, false},
	}
	for _, tt := range tests {
		c, err := tt.c.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		s := c.spec()
		if s.MTU != tt.mtu || s.Rate != tt.rate {
			t.Errorf("%+v: MTU %v rate %v, want %v %v", tt.c, s.MTU, s.Rate, tt.mtu, tt.rate)
		}
		if s.Sysctl[0][sysctlRmem] != defs[sysctlRmem] || s.Sysctl[0][sysctlWmem] != defs[sysctlWmem] {
			t.Errorf("%+v: host a sysctls %v, want the kernel defaults", tt.c, s.Sysctl[0])
		}
		smallB := s.Sysctl[1][sysctlRmem] == "4096 65536 65536" && s.Sysctl[1][sysctlWmem] == "4096 16384 65536"
		if smallB != tt.smallB {
			t.Errorf("%+v: host b sysctls %v", tt.c, s.Sysctl[1])
		}
	}
}

// The gap scenarios each plant one buffer limit, on the sender (a) or
// the receiver (b), and leave the other host at the kernel's defaults.
func TestSpecBufferScenarios(t *testing.T) {
	defs := kernelDefaults()
	for _, tt := range []struct {
		sc   Scenario
		host int
		key  string
		want string
	}{
		{SmallSndbuf, 0, sysctlWmem, "4096 16384 65536"},
		{SmallRcvbuf, 1, sysctlRmem, "4096 65536 65536"},
	} {
		c, err := Config{Scenario: tt.sc}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		s := c.spec()
		for h := range 2 {
			for _, k := range managedSysctls() {
				want := defs[k]
				if h == tt.host && k == tt.key {
					want = tt.want
				}
				if got := s.Sysctl[h][k]; got != want {
					t.Errorf("%s: host %d %s = %q, want %q", tt.sc, h, k, got, want)
				}
			}
		}
		if s.Rate != [2]Rate{} {
			t.Errorf("%s shapes %v", tt.sc, s.Rate)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{
		{Name: "Bad"}, {Scenario: "fast"}, {MTU: 67}, {MTU: 65536}, {Rate: 1},
	} {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c, err := Config{}.withDefaults()
	if err != nil || c.Name != DefaultName || c.Scenario != Healthy {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

func TestLabOfNamespace(t *testing.T) {
	for ns, want := range map[string]string{
		"lr-demo-a": "demo", "lr-demo-b": "demo", "lr-x-a-b": "x-a", "lr-demo-c": "", "demo-a": "", "lr--a": "", "lr-Demo-a": "",
	} {
		got, ok := labOfNamespace(ns)
		if got != want && ok || (want != "") != ok {
			t.Errorf("labOfNamespace(%q) = %q, %v; want %q", ns, got, ok, want)
		}
	}
}

func TestTbfFor(t *testing.T) {
	tb := tbfFor(3, 10e9)
	if tb.Rate != 1.25e9 || tb.LinkIndex != 3 {
		t.Errorf("rate %d B/s on %d, want 1.25e9 on 3", tb.Rate, tb.LinkIndex)
	}
	q := qdiscStatus(tb)
	if q.RateBPS != 10e9 || q.BurstBytes < 2_400_000 || q.BurstBytes > 2_600_000 || q.LimitBytes != 5_000_000 {
		t.Errorf("10gbit: %+v, want burst 2.5 MB (2 ms) and limit 5 MB", q)
	}
	if got := tbfFor(1, 1e6); got.Limit != 2*minBurst {
		t.Errorf("1mbit limit %d, want twice the minimum burst", got.Limit)
	}
	if got := tbfFor(1, maxRate); got.Limit != 2*maxBurst {
		t.Errorf("10tbit limit %d, want twice the maximum burst", got.Limit)
	}
}

func TestExitCode(t *testing.T) {
	if c, ok := ExitCode(nil); c != 0 || !ok {
		t.Errorf("nil: %d %v", c, ok)
	}
	if _, ok := ExitCode(errors.New("x")); ok {
		t.Error("a non-exit error was taken for an exit status")
	}
	if c, ok := ExitCode(exec.Command("sh", "-c", "exit 7").Run()); c != 7 || !ok {
		t.Errorf("exit 7: %d %v", c, ok)
	}
	if c, ok := ExitCode(exec.Command("sh", "-c", "kill -TERM $$").Run()); c != 143 || !ok {
		t.Errorf("SIGTERM: %d %v", c, ok)
	}
}

// TestBadNamesCreateNothing needs no root: names are refused first.
func TestBadNamesCreateNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", dir)
	for _, bad := range []string{"Bad", "toolongname1", "a_b", "-x", "../x"} {
		_, err := Up(t.Context(), Config{Name: bad})
		if err == nil || errors.Is(err, ErrNeedRoot) {
			t.Errorf("Up(%q) = %v, want a name error", bad, err)
		}
		if _, err := Down(t.Context(), bad); err == nil {
			t.Errorf("Down(%q) accepted the name", bad)
		}
		if err := Start(bad, A, exec.Command("true")); err == nil {
			t.Errorf("Start(%q) accepted the name", bad)
		}
		for _, h := range hosts() {
			if _, err := os.Lstat(nsPath(Namespace(bad, h))); err == nil {
				t.Errorf("Up(%q) created %s", bad, nsPath(Namespace(bad, h)))
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the state directory is not empty after refused names: %v", ents)
	}
}

func TestManyConfig(t *testing.T) {
	for _, c := range []Config{
		{Hosts: 2}, {Hosts: 1}, {Hosts: 65}, {Hosts: -3}, {Hosts: 6, Scenario: SmallBuffers}, {Hosts: 6, Scenario: MTUMismatch},
	} {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, c := range []Config{{Hosts: 3}, {Hosts: 64, Scenario: Capped10G}, {Hosts: 6, Rate: 1e9, MTU: 1500}} {
		if _, err := c.withDefaults(); err != nil {
			t.Errorf("%+v refused: %v", c, err)
		}
	}
	s := Config{Hosts: 6, Scenario: Capped10G}.manySpec()
	if s.rate != rate10G || s.mtu != jumboMTU || s.hosts != 6 {
		t.Errorf("capped-10g spec %+v", s)
	}
	s = Config{Hosts: 6, Scenario: Capped10G, Rate: 1e9, MTU: 1500}.manySpec()
	if s.rate != 1e9 || s.mtu != 1500 {
		t.Errorf("--rate/--mtu spec %+v", s)
	}
	if got := (Config{Name: "x", Hosts: 3}).namespaces(); strings.Join(got, " ") != "lr-x-h01 lr-x-h02 lr-x-h03 lr-x-sw" {
		t.Errorf("namespaces %v", got)
	}
}

func TestManyHostNames(t *testing.T) {
	for s, want := range map[string]int{"h01": 1, "h09": 9, "h64": 64, "h65": 0, "h00": 0, "h1": 0, "h001": 0, "a": 0, "sw": 0, "hx1": 0} {
		if got := Host(s).Index(); got != want {
			t.Errorf("Host(%q).Index() = %d, want %d", s, got, want)
		}
	}
	if HostN(3) != "h03" || HostN(3).Addr() != "198.18.0.3" || HostN(64).Addr() != "198.18.0.64" || Switch.Addr() != SwitchAddr {
		t.Error("host names or addresses")
	}
	for _, ok := range []string{"a", "b", "sw", "h01", "h64"} {
		if _, err := ParseHost(ok); err != nil {
			t.Errorf("ParseHost(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"c", "h65", "h0", "", "H01"} {
		if _, err := ParseHost(bad); err == nil {
			t.Errorf("ParseHost(%q) accepted", bad)
		}
	}
	for ns, want := range map[string]string{"lr-x-h01": "x", "lr-x-sw": "x", "lr-x-h1-h64": "x-h1", "lr-x-h65": "", "lr-x-hub": ""} {
		got, ok := labOfNamespace(ns)
		if got != want && ok || (want != "") != ok {
			t.Errorf("labOfNamespace(%q) = %q, %v; want %q", ns, got, ok, want)
		}
	}
}

// TestDemoConfig: the demo gives small-buffers MTU 1500 and 16 KiB in
// host b, unless an MTU or a buffer was asked for; other scenarios keep
// theirs.
func TestDemoConfig(t *testing.T) {
	for _, tt := range []struct {
		in        Config
		mtu, bufs int
	}{
		{Config{Scenario: SmallBuffers}, 1500, 16384},
		{Config{Scenario: SmallBuffers, MTU: 9000}, 9000, 0},
		{Config{Scenario: SmallBuffers, BufferMax: 65536}, 0, 65536},
		{Config{Scenario: Healthy}, 0, 0},
		{Config{Scenario: MTUMismatch}, 0, 0},
	} {
		got := demoConfig(tt.in)
		if got.MTU != tt.mtu || got.BufferMax != tt.bufs {
			t.Errorf("demoConfig(%+v): MTU %d, buffers %d; want %d, %d", tt.in, got.MTU, got.BufferMax, tt.mtu, tt.bufs)
		}
	}
	s := demoConfig(Config{Scenario: SmallBuffers}).spec()
	if s.MTU != [2]int{1500, 1500} || s.Sysctl[1][sysctlRmem] != "4096 16384 16384" || s.Sysctl[1][sysctlWmem] != "4096 16384 16384" || s.Sysctl[0][sysctlRmem] != kernelDefaults()[sysctlRmem] {
		t.Errorf("the demo's small-buffers: %+v", s)
	}
	// A buffer below 16 KiB keeps tcp_wmem's default at or under it.
	if s := (Config{Scenario: SmallBuffers, BufferMax: 8192}).spec(); s.Sysctl[1][sysctlWmem] != "4096 8192 8192" {
		t.Errorf("8 KiB: tcp_wmem %q", s.Sysctl[1][sysctlWmem])
	}
	for _, bad := range []int{-1, 4095, 1<<30 + 1} {
		if _, err := (Config{Scenario: SmallBuffers, BufferMax: bad}).withDefaults(); err == nil {
			t.Errorf("buffer maximum %d accepted", bad)
		}
	}
}

// TestPacingPlan: the plan of host a's qdisc under each scenario, from
// each qdisc it may have now (none, the pacing fq at one rate or
// another, the shaped scenario's tbf): fq is put in, kept, changed,
// replaced or removed, with no kernel needed to read the plan.
func TestPacingPlan(t *testing.T) {
	lab0 := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: Iface, Index: 3, MTU: jumboMTU, Flags: net.FlagUp}}
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: 1, Flags: net.FlagUp}}
	addr := netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(AddrA).To4(), Mask: net.CIDRMask(prefixLen, 32)}}
	noqueue := &netlink.GenericQdisc{QdiscType: "noqueue"}
	tests := []struct {
		name string
		c    Config
		root netlink.Qdisc
		want string // the one change, "" for none
	}{
		{"pacing from none", Config{Scenario: Pacing}, noqueue, "pace each flow leaving lab0 in x: fq maxrate 1gbit"},
		{"pacing kept", Config{Scenario: Pacing}, fqFor(3, 1e9), ""},
		{"pacing at --rate", Config{Scenario: Pacing, Rate: 2.5e9}, fqFor(3, 1e9), "pace each flow leaving lab0 in x: fq maxrate 2.5gbit"},
		{"pacing over tbf", Config{Scenario: Pacing}, tbfFor(3, 2e9), "pace each flow leaving lab0 in x: fq maxrate 1gbit"},
		{"shaped over fq", Config{Scenario: Shaped}, fqFor(3, 1e9), "shape lab0 in x: tbf 2gbit burst 500KB limit 1MB"},
		{"healthy removes fq", Config{Scenario: Healthy}, fqFor(3, 1e9), "remove fq maxrate 1gbit from lab0 in x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.c.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			want := c.spec()
			if want.Rate[1] != 0 || want.Pace[1] != 0 {
				t.Errorf("spec shapes host b: %+v", want)
			}
			hv := hostView{ns: "x", state: nsPinned, lab0: lab0, lo: lo, addrs: []netlink.Addr{addr}, root: tt.root, sysctl: kernelDefaults()}
			plan, err := hostSettings(hv, AddrA, jumboMTU, want.Rate[0], want.Pace[0], want.lineRate(), want.Sysctl[0])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range plan {
				got = append(got, ch.desc)
			}
			if tt.want == "" && len(got) != 0 || tt.want != "" && (len(got) != 1 || got[0] != tt.want) {
				t.Errorf("plan %q, want [%q]", got, tt.want)
			}
		})
	}
	if s := qdiscStatus(fqFor(3, 1e9)); s.MaxRateBPS != 1e9 || s.String() != "fq maxrate 1gbit" {
		t.Errorf("status of the pacing fq: %+v %q", s, s)
	}
	if f := fqFor(3, MaxPacingRate); f.FlowMaxRate != 1<<32-2 {
		t.Errorf("fq at the highest rate: maxrate %d B/s", f.FlowMaxRate)
	}
}
