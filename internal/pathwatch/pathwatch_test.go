package pathwatch

import (
	"net/netip"
	"testing"
)

// TestLoopback: the route to 127.0.0.1 is found on lo and holds; the same
// route with its interface gone, its address gone, or its interface
// pointing at lo for a peer that no longer leaves through it, is named
// as broken in a few words. (The lab tests of cmd/linerate remove real
// links mid-run.)
func TestLoopback(t *testing.T) {
	r, err := Lookup(netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Iface != "lo" || r.Index < 1 || r.Src != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("route %+v", r)
	}
	if err := r.Check(); err != nil {
		t.Errorf("the loopback path: %v", err)
	}
	var none *Route
	if err := none.Check(); err != nil {
		t.Errorf("a nil route: %v", err)
	}
	for _, tc := range []struct {
		edit func(r *Route)
		want string
	}{
		{func(r *Route) { r.Index, r.Iface = 1<<30, "lab0" }, "lab0 was removed"},
		{func(r *Route) { r.Index, r.Iface = 1<<30, "" }, "interface 1073741824 was removed"},
		{func(r *Route) { r.Src = netip.MustParseAddr("198.18.255.254") }, "198.18.255.254 was removed from lo"},
	} {
		broken := *r
		tc.edit(&broken)
		if err := broken.Check(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", broken, err, tc.want)
		}
	}
}
