package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/testutil"
)

// hostTree returns the committed test tree name: below the repository's
// testdata/hosts, or $LINERATE_TESTDATA/hosts when the tests run in a
// copy of the module without the trees' symbolic links.
func hostTree(name string) string {
	if d := os.Getenv("LINERATE_TESTDATA"); d != "" {
		return filepath.Join(d, "hosts", name)
	}
	return filepath.Join("..", "..", "testdata", "hosts", name)
}

// copyTree copies test tree name to a temporary directory, links as links,
// so that tests can change it.
func copyTree(t *testing.T, name string) string {
	t.Helper()
	return testutil.CopyTree(t, hostTree(name))
}

// sameTree fails the test for every path whose bytes differ.
func sameTree(t *testing.T, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: gone", p)
		} else if g != w {
			t.Errorf("%s: %q, want %q", p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: new", p)
		}
	}
}

func writeFile(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// debianIRQBalance is Debian 12's /etc/default/irqbalance.
const debianIRQBalance = `#Configuration for the irqbalance daemon

#Should irqbalance be enabled?
ENABLED="1"
#Balance the IRQs only once?
ONESHOT="0"
`

// open returns an FS and inventory over root.
func open(t *testing.T, root string) (*hostfs.FS, *inventory.Inventory) {
	t.Helper()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fs, inv
}

// plan plans for the tree at root.
func plan(t *testing.T, root string, dev Devices, opts Options) *Plan {
	t.Helper()
	fs, inv := open(t, root)
	p, err := NewPlan(Input{FS: fs, Inventory: inv, Devices: dev}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeDevices is Devices in memory. failSet names a kind ("channels",
// "rings", "mtu") whose set fails; clamp makes SetChannels take one queue
// fewer than asked, as a driver might.
type fakeDevices struct {
	mu      sync.Mutex
	ch      map[string]Channels
	rings   map[string]Rings
	mtu     map[string]int
	failSet string
	clamp   bool
}

func newFakeDevices() *fakeDevices {
	return &fakeDevices{
		ch:    map[string]Channels{},
		rings: map[string]Rings{},
		mtu:   map[string]int{},
	}
}

var errFake = errors.New("fake driver error")

func (f *fakeDevices) Channels(iface string) (Channels, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.ch[iface]
	if !ok {
		return c, fmt.Errorf("channels of %s: %w", iface, ErrNotSupported)
	}
	return c, nil
}

func (f *fakeDevices) SetChannels(iface string, c Channels) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSet == "channels" {
		return errFake
	}
	if f.clamp && c.Combined > 1 {
		c.Combined--
	}
	f.ch[iface] = c
	return nil
}

func (f *fakeDevices) Rings(iface string) (Rings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rings[iface]
	if !ok {
		return r, fmt.Errorf("rings of %s: %w", iface, ErrNotSupported)
	}
	return r, nil
}

func (f *fakeDevices) SetRings(iface string, r Rings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSet == "rings" {
		return errFake
	}
	f.rings[iface] = r
	return nil
}

func (f *fakeDevices) MTU(iface string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mtu[iface], nil
}

func (f *fakeDevices) SetMTU(iface string, mtu int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSet == "mtu" {
		return errFake
	}
	f.mtu[iface] = mtu
	return nil
}

// xl710 returns fake devices holding the NIC of the XL710 40 GbE host
// in a Gen2 x4 slot: one combined queue of
// 64, rings of 512 of 4096, MTU 1500.
func xl710() *fakeDevices {
	f := newFakeDevices()
	f.ch["ens2f0np0"] = Channels{Combined: 1, Other: 1, MaxCombined: 64, MaxOther: 1}
	f.rings["ens2f0np0"] = Rings{RX: 512, TX: 512, MaxRX: 4096, MaxTX: 4096}
	f.mtu["ens2f0np0"] = 1500
	return f
}
