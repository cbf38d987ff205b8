package doctor

import (
	"fmt"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

// writeRoCE shows what RoCE depends on: each Ethernet RDMA port's GIDs
// and active MTU, then the port's DCB, ECN and IOMMU facts where read.
func writeRoCE(t *textWriter, n NICReport) {
	for _, p := range n.RDMA {
		if p.LinkLayer != "Ethernet" || len(p.GIDs) == 0 {
			continue
		}
		var v1, v2 []string
		for _, g := range p.GIDs {
			if g.Type == "RoCE v2" {
				v2 = append(v2, g.Address)
			} else {
				v1 = append(v1, g.Address)
			}
		}
		line := fmt.Sprintf("%s/%d", p.Device, p.Port)
		if len(v2) > 0 {
			line += "  v2 " + strings.Join(v2, ", ")
		} else {
			line += "  " + t.st.Yellow("no RoCE v2 GID") + "  v1 " + strings.Join(v1, ", ")
		}
		if p.ActiveMTU != nil {
			mtu := fmt.Sprintf("active MTU %d", *p.ActiveMTU)
			if *p.ActiveMTU < 4096 {
				mtu = t.st.Yellow(mtu)
			}
			line += "  " + mtu
		}
		t.field("roce", line)
	}
	if c := n.DCB; c != nil {
		var parts []string
		if c.PFC != nil {
			pfc := "off"
			if len(c.PFC.Enabled) > 0 {
				pfc = "on " + cpulist.Format(c.PFC.Enabled)
			}
			parts = append(parts, "PFC "+pfc)
		}
		switch {
		case len(c.Trust) > 0:
			parts = append(parts, "trust "+strings.Join(c.Trust, ","))
		case c.Trust != nil:
			parts = append(parts, "trusts no selector")
		case c.App != nil && c.HasSelector("dscp"):
			parts = append(parts, "trust dscp (DSCP mappings)")
		case c.App != nil:
			parts = append(parts, "trust pcp (no DSCP mapping)")
		}
		if p, ok := c.DSCPPriority(RoCEDSCP); ok {
			parts = append(parts, fmt.Sprintf("DSCP %d → %d", RoCEDSCP, p))
		}
		if c.DCBX != nil {
			parts = append(parts, "DCBX "+*c.DCBX)
		}
		t.field("dcb", strings.Join(parts, "  "))
	}
	if e := n.ECN; e != nil {
		t.field("ecn", fmt.Sprintf("np %s  rp %s", ecnPrios(e.NP), ecnPrios(e.RP)))
	}
	if m := n.IOMMU; m != nil {
		typ := m.Type
		if typ == "" {
			typ = "(type not reported)"
		}
		t.field("iommu", fmt.Sprintf("group %d %s", m.Group, typ))
	}
}

// ecnPrios writes the priorities whose switch is on: "on 0-7", "on 0-2,4-7".
func ecnPrios(sw [8]*bool) string {
	var on []int
	for p, b := range sw {
		if b != nil && *b {
			on = append(on, p)
		}
	}
	if len(on) == 0 {
		return "off"
	}
	return "on " + cpulist.Format(on)
}

// writeGPUs lists the GPUs with their distance to each NIC, as
// `nvidia-smi topo -m` names it.
func writeGPUs(t *textWriter, gpus []inventory.GPU) {
	for _, g := range gpus {
		t.blank()
		name := strings.TrimSpace(g.Vendor + " " + g.Model)
		if name == "" {
			name = "GPU"
		}
		t.para("", "  ", fmt.Sprintf("%s  %s %s  %s  numa %s", t.st.Bold("GPU "+g.PCI), name,
			t.st.Dim(fmt.Sprintf("[%s:%s]", strings.TrimPrefix(g.VendorID, "0x"), strings.TrimPrefix(g.DeviceID, "0x"))), g.Driver, numaName(g.NUMANode)))
		var to []string
		for _, n := range g.NICs {
			s := n.Interface + " " + n.Distance
			if n.RDMA {
				s += " (RDMA)"
			}
			to = append(to, s)
		}
		if len(to) > 0 {
			t.field("nics", strings.Join(to, ", "))
		}
	}
}
