package tune

import (
	"strings"
	"testing"
)

func TestSettings(t *testing.T) {
	for _, bad := range []string{"rx 1 tx", "rx x", "rx -1", "rx 4294967296"} {
		if s, err := parseSettings(bad); err == nil {
			t.Errorf("parseSettings(%q) = %v; want an error", bad, s)
		}
	}
	if _, err := parseSettings("rx x"); err == nil || !strings.Contains(err.Error(), "x is not a count") {
		t.Errorf("not a count: %v", err)
	}
	s, err := parseSettings("rx 1 tx 1")
	if err != nil {
		t.Fatal(err)
	}
	m := s.merge(settings{{"tx", 2}, {"combined", 3}})
	if m.String() != "rx 1 tx 2 combined 3" || s.String() != "rx 1 tx 1" {
		t.Errorf("merge = %q (s now %q)", m, s)
	}
	if !m.equal(settings{{"combined", 3}, {"rx", 1}, {"tx", 2}}) || m.equal(s) || m.equal(settings{{"rx", 1}, {"tx", 2}, {"combined", 4}}) {
		t.Error("equal compares by name and value")
	}
	if v, ok := m.get("other"); ok || v != 0 {
		t.Errorf("get(other) = %d, %v", v, ok)
	}
	c := Channels{RX: 1, TX: 1, MaxRX: 4, MaxTX: 4}.with(settings{{"rx", 2}, {"combined", 0}})
	if c.RX != 2 || c.TX != 1 || c.MaxRX != 4 {
		t.Errorf("with = %+v", c)
	}
	r := Rings{RX: 512, TX: 512, MaxRX: 4096}.with(settings{{"tx", 1024}})
	if r.RX != 512 || r.TX != 1024 || r.settings().String() != "rx 512 rx-mini 0 rx-jumbo 0 tx 1024" {
		t.Errorf("rings with = %+v", r)
	}
}
