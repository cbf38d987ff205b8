package doctor

import (
	"encoding/json"
	"slices"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/netdev"
)

// The live sources Live reads beside /sys and /proc, as LiveOptions.Unread
// names them.
const (
	SourceNetlink = "netlink" // rtnetlink: link kinds, root qdiscs (shaped rates)
	SourceEthtool = "ethtool" // the ethtool netlink family: link modes, FEC, optics, counters, channels, rings
	// SourceDCB is rtnetlink's DCB messages (PFC, ETS, the APP table: the
	// RoCE facts), read on a socket of their own; metrics counts its
	// failures under SourceNetlink.
	SourceDCB = "dcb"
)

// LiveOptions says what Live diagnoses and how it reads the host.
type LiveOptions struct {
	Options
	// Ethtool, when not nil, reads one interface's ethtool facts in place
	// of the client Live opens for the call (metrics keeps its client and
	// a cache of module reads across collections; snapshot records what
	// it reads). It is called on a captured tree too.
	Ethtool func(iface string) *ethtool.Facts
	// Read, when not nil, sees each interface's ethtool facts as read
	// (snapshot records them).
	Read func(iface string, f *ethtool.Facts)
	// EthtoolVirtual says which virtual interfaces' ethtool facts are
	// read; nil reads those named in Ifaces (a host may have hundreds of
	// veths; one asked about is read).
	EthtoolVirtual func(iface string) bool
	// ReadDCB, when not nil, sees each PCI NIC's DCB reading as read live
	// (snapshot records it).
	ReadDCB func(iface string, r *dcb.Reading)
	// Unread, when not nil, hears of a live source that could not be read
	// (SourceNetlink, SourceEthtool, SourceDCB) and why: what it gives is unknown for
	// this diagnosis, which goes on without it.
	Unread func(source string, err error)
}

// NoEthtool reads no ethtool facts: LiveOptions.Ethtool of a caller whose
// own ethtool source failed (and said so).
func NoEthtool(string) *ethtool.Facts { return nil }

// Examined is what Live read and what doctor concluded from it.
type Examined struct {
	// Netdev is rtnetlink's answer; nil on a captured tree (the inventory
	// reads what the tree recorded) or when it could not be asked.
	Netdev    *netdev.Facts
	Inventory *inventory.Inventory
	Report    *Report
}

// Live reads the host below fs and diagnoses it, as `linerate doctor`
// does: on the live root (as the calling thread sees it: its network
// namespace) rtnetlink's facts, each NIC's ethtool facts — a virtual
// interface's only when asked for — and each PCI NIC's DCB configuration
// beside /sys and /proc, on a captured
// tree what the tree holds. It is the one recipe for live facts: doctor,
// tune, snapshot, metrics, the reports bench stores with every run and
// the agent's doctor relay all read a host through it, so what each shows
// of a NIC is the same.
func Live(fs *hostfs.FS, opts LiveOptions) (*Examined, error) {
	unread := func(source string, err error) {
		if opts.Unread != nil {
			opts.Unread(source, err)
		}
	}
	var iopts inventory.Options
	if fs.IsLive() {
		facts, err := netdev.Query()
		if err != nil {
			unread(SourceNetlink, err)
		} else {
			iopts.Live = facts
		}
	}
	iopts.Ethtool = opts.Ethtool
	if iopts.Ethtool == nil && fs.IsLive() {
		c, err := ethtool.Open()
		if err != nil {
			unread(SourceEthtool, err)
		} else {
			defer c.Close()
			iopts.Ethtool = func(iface string) *ethtool.Facts { return ethtool.Collect(c, iface) }
		}
	}
	if read := iopts.Ethtool; read != nil && opts.Read != nil {
		iopts.Ethtool = func(iface string) *ethtool.Facts {
			f := read(iface)
			opts.Read(iface, f)
			return f
		}
	}
	if iopts.Ethtool != nil {
		iopts.EthtoolVirtual = opts.EthtoolVirtual
		if iopts.EthtoolVirtual == nil {
			named := slices.Clone(opts.Ifaces)
			iopts.EthtoolVirtual = func(iface string) bool { return slices.Contains(named, iface) }
		}
	}
	if fs.IsLive() {
		if cl, err := dcb.Dial(); err != nil {
			unread(SourceDCB, err)
		} else {
			defer cl.Close()
			iopts.DCB = func(iface string) *dcb.Reading {
				r := dcb.Read(cl, iface)
				if opts.ReadDCB != nil {
					opts.ReadDCB(iface, r)
				}
				return r
			}
		}
	}
	inv, err := inventory.Collect(fs, iopts)
	if err != nil {
		return nil, err
	}
	rep, err := Diagnose(inv, opts.Options)
	if err != nil {
		return nil, err
	}
	return &Examined{Netdev: iopts.Live, Inventory: inv, Report: rep}, nil
}

// LiveReport is the linerate.doctor/v1 document of this host (as the
// calling thread sees it: its network namespace) for iface, or for every
// NIC when iface is "": what `linerate doctor --iface IFACE --json`
// prints there. bench stores it with every run, for both ends, and the
// agent sends it when asked.
func LiveReport(iface string) (json.RawMessage, error) {
	var opts LiveOptions
	if iface != "" {
		opts.Ifaces = []string{iface}
	}
	fs := hostfs.Live()
	defer fs.Close()
	x, err := Live(fs, opts)
	if err != nil {
		return nil, err
	}
	return json.Marshal(x.Report)
}
