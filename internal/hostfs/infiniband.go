package hostfs

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Bounds on what one RDMA port may make a reader do: mlx5 has 255 GID
// entries a port and about 60 hw_counters; a snapshot with more is
// damaged or hostile, and the rest is left unread.
const (
	maxGIDEntries  = 1024
	maxCounterDirs = 512
)

// RDMAPort is one port of an RDMA device, as
// /sys/class/infiniband/<dev>/ports/<port>/ shows it
// (Documentation/ABI/stable/sysfs-class-infiniband,
// drivers/infiniband/core/sysfs.c).
type RDMAPort struct {
	Device string
	Port   int
	// State and PhysState are the names of "4: ACTIVE" and "5: LinkUp";
	// StateID is the number of State (4 is ACTIVE).
	State, PhysState string
	StateID          int
	// RateGbps is the rate file's figure ("100 Gb/sec (4X EDR)" gives 100).
	RateGbps float64
	// Rate is the rate file as the kernel wrote it.
	Rate      string
	LinkLayer string
	// GIDs are the GID table's non-zero entries, by index.
	GIDs []GID
	// Counters and HWCounters are counters/ and hw_counters/ by file
	// name: the IB port counters (PMA) and the driver's own (mlx5:
	// out_of_sequence, np_cnp_sent, …). Nil when the directory is absent.
	Counters, HWCounters map[string]uint64
	// Unread lists what could not be read or parsed, each with its
	// reason ("hw_counters/out_of_sequence: …"); the rest was read.
	Unread []string
}

// GID is one entry of a port's GID table.
type GID struct {
	Index int
	// Raw is the gids/<i> file as the kernel prints it (%pI6).
	Raw string
	// Address is the GID as an address: an IPv4 address for the
	// IPv4-mapped GIDs RoCE v2 derives from an interface's IPv4
	// addresses, else IPv6.
	Address netip.Addr
	// Type is gid_attrs/types/<i>: "IB/RoCE v1" or "RoCE v2" (empty when
	// the kernel gives none, as for InfiniBand ports before 4.19).
	Type string
	// Netdev is gid_attrs/ndevs/<i>: the interface the entry belongs to.
	Netdev string
}

// RoCEv2 reports whether the entry is a RoCE v2 GID.
func (g GID) RoCEv2() bool { return g.Type == "RoCE v2" }

// portDir is the sysfs directory of an RDMA port.
func portDir(dev string, port int) string {
	return "sys/class/infiniband/" + dev + "/ports/" + strconv.Itoa(port)
}

// RDMAPortNumbers lists the ports of an RDMA device, sorted.
func (fs *FS) RDMAPortNumbers(dev string) ([]int, error) {
	names, err := fs.ReadDir("sys/class/infiniband/" + dev + "/ports")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, n := range names {
		if p, err := strconv.Atoi(n); err == nil && p > 0 && p < 256 {
			out = append(out, p)
		}
	}
	return out, nil
}

// ReadRDMAPort reads one port of an RDMA device: its state, rate, link
// layer, GID table and counters. It fails only when the port's state
// cannot be read (no such port); what else cannot be read is in Unread.
//
// Our own reader rather than prometheus/procfs's InfiniBandDevice: that
// parser fails the whole device on one counter holding garbage, keeps
// only the counters it knows by name (newer mlx5 hw_counters are lost),
// reads no GID table, and reads the files itself, past a recording FS.
func (fs *FS) ReadRDMAPort(dev string, port int) (*RDMAPort, error) {
	dir := portDir(dev, port)
	p := &RDMAPort{Device: dev, Port: port}
	s, err := fs.ReadString(dir + "/state")
	if err != nil {
		return nil, fmt.Errorf("RDMA port %s/%d: %w", dev, port, err)
	}
	if p.StateID, p.State, err = parseIBState(s); err != nil {
		return nil, fmt.Errorf("%w in %s: %v", ErrParse, fs.Display(dir+"/state"), err)
	}
	unread := func(what string, err error) {
		if err != nil && !IsNotExist(err) {
			p.Unread = append(p.Unread, what+": "+err.Error())
		}
	}
	if s, err := fs.ReadString(dir + "/phys_state"); err == nil {
		_, p.PhysState, err = parseIBState(s)
		unread("phys_state", err)
	} else {
		unread("phys_state", err)
	}
	if s, err := fs.ReadString(dir + "/rate"); err == nil {
		p.Rate = s
		p.RateGbps, err = ParseIBRate(s)
		unread("rate", err)
	} else {
		unread("rate", err)
	}
	p.LinkLayer, err = fs.ReadString(dir + "/link_layer")
	unread("link_layer", err)
	p.GIDs, err = fs.readGIDs(dir)
	unread("gids", err)
	c, err := fs.RDMACounters(dev, port)
	p.Counters, p.HWCounters = c.Counters, c.HWCounters
	p.Unread = append(p.Unread, c.Unread...)
	unread("counters", err)
	return p, nil
}

// parseIBState reads "4: ACTIVE" (state, phys_state).
func parseIBState(s string) (int, string, error) {
	num, name, ok := strings.Cut(s, ":")
	id, err := strconv.Atoi(strings.TrimSpace(num))
	name = strings.TrimSpace(name)
	if !ok || err != nil || name == "" {
		return 0, "", fmt.Errorf("%q is not \"<number>: <name>\"", short(s))
	}
	return id, name, nil
}

// ParseIBRate reads a port's rate file: "100 Gb/sec (4X EDR)",
// "2.5 Gb/sec (1X SDR)", "25 Gb/sec (1X EDR)".
func ParseIBRate(s string) (float64, error) {
	num, rest, ok := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(v >= 0 && v <= 1e5) || !strings.HasPrefix(rest, "Gb/sec") {
		return 0, fmt.Errorf("%q is not \"<n> Gb/sec (…)\"", short(s))
	}
	return v, nil
}

// ParseGID reads a gids/<i> file ("fe80:0000:0000:0000:0e42:a1ff:fea8:2c2a").
// The zero GID (an unused entry) gives the zero Addr and no error.
func ParseGID(s string) (netip.Addr, error) {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q is not a GID", short(s))
	}
	if a.IsUnspecified() {
		return netip.Addr{}, nil
	}
	return a.Unmap(), nil
}

// readGIDs reads the non-zero entries of a port's GID table with their
// types and netdevs. The kernel answers EINVAL for the type and netdev of
// an empty entry, and an entry a driver adds or drops while we read may
// answer so too: such an entry keeps empty fields.
func (fs *FS) readGIDs(dir string) ([]GID, error) {
	names, err := fs.ReadDir(dir + "/gids")
	if err != nil {
		return nil, err
	}
	var out []GID
	var bad []string
	for i, n := range names {
		if i >= maxGIDEntries {
			bad = append(bad, fmt.Sprintf("more than %d entries; the rest not read", maxGIDEntries))
			break
		}
		idx, err := strconv.Atoi(n)
		if err != nil || idx < 0 {
			continue
		}
		raw, err := fs.ReadString(dir + "/gids/" + n)
		if err != nil {
			continue
		}
		a, err := ParseGID(raw)
		if err != nil {
			bad = append(bad, "gids/"+n+": "+err.Error())
			continue
		}
		if !a.IsValid() {
			continue
		}
		g := GID{Index: idx, Raw: raw, Address: a}
		if t, err := fs.ReadString(dir + "/gid_attrs/types/" + n); err == nil {
			g.Type = t
		}
		if d, err := fs.ReadString(dir + "/gid_attrs/ndevs/" + n); err == nil {
			g.Netdev = d
		}
		out = append(out, g)
	}
	if len(bad) > 0 {
		return out, errors.New(strings.Join(bad, "; "))
	}
	return out, nil
}

// RDMACounterSet is what RDMACounters read of one port.
type RDMACounterSet struct {
	Counters, HWCounters map[string]uint64
	Unread               []string
}

// RDMACounters reads a port's counters/ and hw_counters/ directories (the
// files are the counter names; each holds one decimal count). A directory
// that is absent gives a nil map; a file that does not hold a count (the
// "N/A (no PMA)" some drivers print) is listed in Unread. It is what a
// bench reads around an RDMA run, as it reads the NIC's counters.
func (fs *FS) RDMACounters(dev string, port int) (RDMACounterSet, error) {
	var set RDMACounterSet
	var err error
	dir := portDir(dev, port)
	set.Counters, err = fs.readCounterDir(dir+"/counters", &set.Unread)
	if err != nil {
		return set, err
	}
	set.HWCounters, err = fs.readCounterDir(dir+"/hw_counters", &set.Unread)
	return set, err
}

func (fs *FS) readCounterDir(dir string, unread *[]string) (map[string]uint64, error) {
	names, err := fs.ReadDir(dir)
	if IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base := dir[strings.LastIndexByte(dir, '/')+1:]
	out := make(map[string]uint64, len(names))
	for i, n := range names {
		if i >= maxCounterDirs {
			*unread = append(*unread, fmt.Sprintf("%s: more than %d files; the rest not read", base, maxCounterDirs))
			break
		}
		s, err := fs.ReadString(dir + "/" + n)
		if err != nil {
			if !IsNotExist(err) {
				*unread = append(*unread, base+"/"+n+": "+err.Error())
			}
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			*unread = append(*unread, fmt.Sprintf("%s/%s: %q is not a count", base, n, short(s)))
			continue
		}
		out[n] = v
	}
	return out, nil
}
