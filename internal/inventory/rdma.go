package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
)

// RoCEHeaderBytes is what RoCE's packets carry beyond the IB payload on
// an Ethernet MTU: GRH 40, UDP 8, BTH 12, XRC 4, atomic 28, ICRC 4 bytes
// (include/rdma/ib_addr.h, iboe_get_mtu).
const RoCEHeaderBytes = 96

// RoCEActiveMTU is the IB MTU RoCE uses on a netdev of MTU mtu: the
// largest of 256, 512, 1024, 2048, 4096 not above mtu − 96, or 0 when
// none fits (the kernel's iboe_get_mtu). MTU 1500 gives 1024; 4200 and
// more give 4096.
func RoCEActiveMTU(mtu int) int {
	left := mtu - RoCEHeaderBytes
	for m := 4096; m >= 256; m /= 2 {
		if left >= m {
			return m
		}
	}
	return 0
}

// RoCEMTUFor is the smallest netdev MTU that gives RoCE an active MTU of
// ib (4096 needs 4192).
func RoCEMTUFor(ib int) int { return ib + RoCEHeaderBytes }

// rdma reads the RDMA devices on the function: every port's state, rate,
// GID table, counters and, on Ethernet, RoCE's active MTU.
func (c *collector) rdma(pciDir string, n *NIC) []RDMAPort {
	ports := []RDMAPort{}
	names, err := c.fs.ReadDir(pciDir + "/infiniband")
	if err != nil {
		return ports
	}
	for _, name := range names {
		dir := "sys/class/infiniband/" + name
		fw, err := c.fs.ReadString(dir + "/fw_ver")
		c.noteErr("RDMA device "+name+" firmware", err)
		hca, _ := c.fs.ReadString(dir + "/hca_type")
		board, _ := c.fs.ReadString(dir + "/board_id")
		nums, err := c.fs.RDMAPortNumbers(name)
		if err != nil {
			c.noteErr("RDMA device "+name, err)
			continue
		}
		for _, num := range nums {
			p, err := c.fs.ReadRDMAPort(name, num)
			if err != nil {
				c.noteErr("RDMA device "+name, err)
				continue
			}
			for _, u := range p.Unread {
				c.note("RDMA port %s/%d: %s", name, num, u)
			}
			ports = append(ports, c.rdmaPort(p, fw, hca, board, n))
		}
	}
	slices.SortFunc(ports, func(a, b RDMAPort) int {
		if a.Device != b.Device {
			return strings.Compare(a.Device, b.Device)
		}
		return a.Port - b.Port
	})
	return ports
}

func (c *collector) rdmaPort(p *hostfs.RDMAPort, fw, hca, board string, n *NIC) RDMAPort {
	out := RDMAPort{
		Device: p.Device, Port: p.Port, State: p.State, PhysState: p.PhysState, RateGbps: p.RateGbps,
		LinkLayer: p.LinkLayer, Firmware: fw, HCAType: hca, BoardID: board, GIDs: []GID{},
		Counters: p.Counters, HWCounters: p.HWCounters,
	}
	for _, g := range p.GIDs {
		out.GIDs = append(out.GIDs, GID{Index: g.Index, Type: g.Type, Ndev: g.Netdev, Address: g.Address.String(), GID: g.Raw})
		if out.Netdev == "" && g.Netdev != "" {
			out.Netdev = g.Netdev
		}
	}
	if out.LinkLayer != "Ethernet" {
		return out
	}
	if out.Netdev == "" {
		out.Netdev = n.Interface
	}
	mtu := n.MTU
	if out.Netdev != n.Interface {
		// RoCE on an upper device (a VLAN, a bond) carries its MTU.
		if v, err := c.fs.ReadInt("sys/class/net/" + out.Netdev + "/mtu"); err == nil {
			mtu = intPtr(int(v))
		} else {
			mtu = nil
			c.noteErr(fmt.Sprintf("MTU of %s (RoCE netdev of %s/%d)", out.Netdev, p.Device, p.Port), err)
		}
	}
	if mtu != nil {
		if m := RoCEActiveMTU(*mtu); m > 0 {
			out.ActiveMTU = &m
		}
	}
	return out
}
