package engine

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCongestionLoaded: a congestion control the kernel has not
// registered is refused before TCP_CONGESTION is tried, so a root process
// never makes the kernel load tcp_NAME for a name a peer chose. "cubic"
// is registered here, so setsockopt would take it: refusing it when the
// list lacks it shows the list is what decides.
func TestCongestionLoaded(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "available")
	os.WriteFile(list, []byte("reno bbr\n"), 0o644)
	for _, c := range []struct {
		name string
		ok   bool
	}{{"reno", true}, {"bbr", true}, {"cubic", false}, {"lp", false}, {"bb", false}} {
		err := congestionLoaded(list, c.name)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "not loaded") || !strings.Contains(err.Error(), "modprobe tcp_"+c.name)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := congestionLoaded(filepath.Join(dir, "none"), "reno"); err == nil {
		t.Error("an unreadable list accepted")
	}
}

// TestApplyRefusesUnregisteredCongestion: on a real socket, a name the
// kernel does not list is refused with the list, and one it lists is set.
func TestApplyRefusesUnregisteredCongestion(t *testing.T) {
	b, err := os.ReadFile(availableCongestionPath)
	if err != nil {
		t.Fatal(err)
	}
	have := strings.Fields(string(b))
	if len(have) == 0 {
		t.Fatal("the kernel lists no congestion control")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := (SockOpts{Congestion: have[0]}).Apply(fd); err != nil {
		t.Errorf("%s (listed): %v", have[0], err)
	}
	got, _ := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	if strings.TrimRight(got, "\x00") != have[0] {
		t.Errorf("TCP_CONGESTION is %q, want %q", got, have[0])
	}
	err = (SockOpts{Congestion: "lrnotamodule"}).Apply(fd)
	if err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("an unlisted name: %v", err)
	}
	// The dialer path (net.Dialer.Control) refuses it too.
	d := net.Dialer{Control: SockOpts{Congestion: "lrnotamodule"}.Control}
	if _, err := d.Dial("tcp", "127.0.0.1:9"); err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("dial with an unlisted name: %v", err)
	}
}
