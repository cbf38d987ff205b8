package inventory

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
)

// gpuVendors names GPU vendors by PCI vendor ID.
var gpuVendors = map[string]string{"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel", "0x1a03": "ASPEED", "0x102b": "Matrox"}

// gpuModels names the GPUs GPUDirect RDMA is used with, by vendor:device
// (a built-in table, as for NICs).
var gpuModels = map[string]string{
	"0x10de:0x20b0": "A100 SXM4 40GB", "0x10de:0x20b2": "A100 SXM4 80GB", "0x10de:0x20b5": "A100 PCIe 80GB",
	"0x10de:0x20f1": "A100 PCIe 40GB", "0x10de:0x2330": "H100 SXM5 80GB", "0x10de:0x2331": "H100 PCIe",
	"0x10de:0x2335": "H200", "0x10de:0x26b5": "L40", "0x10de:0x26b9": "L40S", "0x10de:0x27b8": "L4",
	"0x10de:0x1db6": "V100 PCIe 32GB", "0x10de:0x2684": "GeForce RTX 4090", "0x10de:0x2204": "GeForce RTX 3090",
	"0x1002:0x740c": "Instinct MI250X", "0x1002:0x74a1": "Instinct MI300X",
}

// maxPCIFunctions bounds the sys/bus/pci/devices listing walked for GPUs.
const maxPCIFunctions = 8192

// pciNode is a PCI function's place in the hierarchy: its canonical sysfs
// path split into the host bridge ("pci0000:30") and the functions from
// the root port down to itself.
type pciNode struct {
	hostBridge string
	chain      []string // BDFs from the root port to the function
	numa       int      // -1 when unknown
}

// pciPath places a PCI function (its canonical directory) in the
// hierarchy.
func pciPath(dir string) (pciNode, bool) {
	rest, ok := strings.CutPrefix(dir, "sys/devices/")
	if !ok {
		return pciNode{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "pci") {
		return pciNode{}, false
	}
	n := pciNode{hostBridge: parts[0], numa: -1}
	for _, p := range parts[1:] {
		if !isBDF(p) {
			return pciNode{}, false
		}
		n.chain = append(n.chain, p)
	}
	return n, true
}

// distance names the route between two functions as `nvidia-smi topo -m`
// does, and returns the bridges on it (from a's upstream port to b's),
// marking those below the common switch: the ones a peer-to-peer transfer
// crosses. nodes is the host's NUMA node count.
func distance(a, b pciNode, nodes int) (string, []PathBridge) {
	bridges := func(chain []string, from int, p2p bool) []PathBridge {
		var out []PathBridge
		for i := len(chain) - 2; i >= from; i-- {
			out = append(out, PathBridge{PCI: chain[i], PeerToPeer: p2p})
		}
		return out
	}
	down := func(chain []string, from int, p2p bool) []PathBridge {
		out := bridges(chain, from, p2p)
		slices.Reverse(out)
		return out
	}
	if a.hostBridge != b.hostBridge {
		d := "SYS"
		if nodes <= 1 || (a.numa >= 0 && a.numa == b.numa) {
			d = "NODE"
		}
		return d, append(bridges(a.chain, 0, false), down(b.chain, 0, false)...)
	}
	common := 0
	for common < len(a.chain)-1 && common < len(b.chain)-1 && a.chain[common] == b.chain[common] {
		common++
	}
	if common == 0 {
		// Different root ports of one host bridge.
		return "PHB", append(bridges(a.chain, 0, false), down(b.chain, 0, false)...)
	}
	ca := common - 1 // the common ancestor's index
	belowA, belowB := len(a.chain)-2-ca, len(b.chain)-2-ca
	d := "PIX"
	if belowA > 1 || belowB > 1 {
		d = "PXB"
	}
	route := bridges(a.chain, ca+1, true)
	route = append(route, PathBridge{PCI: a.chain[ca]})
	return d, append(route, down(b.chain, ca+1, true)...)
}

// distanceRank orders distances, nearest first.
func distanceRank(d string) int { return slices.Index([]string{"PIX", "PXB", "PHB", "NODE", "SYS"}, d) }

// gpus lists the GPUs (class 0x0300 VGA and 0x0302 3D controllers) with
// their distance to every PCI NIC and the ACS control of the bridges
// between them.
func (c *collector) gpus(nics []NIC, nodes int) []GPU {
	out := []GPU{}
	names, err := c.fs.ReadDir("sys/bus/pci/devices")
	if err != nil {
		c.noteErr("PCI devices (GPUs)", err)
		return out
	}
	type nicNode struct {
		nic  *NIC
		node pciNode
	}
	var nicNodes []nicNode
	for i := range nics {
		n := &nics[i]
		dir, err := c.fs.Resolve("sys/bus/pci/devices/" + n.PCI)
		if err != nil {
			continue
		}
		if node, ok := pciPath(dir); ok {
			node.numa = valueOr(n.NUMANode, -1)
			nicNodes = append(nicNodes, nicNode{n, node})
		}
	}
	acs := map[string]*ACSState{}
	for i, bdf := range names {
		if i >= maxPCIFunctions {
			c.note("more than %d PCI functions: the rest not searched for GPUs", maxPCIFunctions)
			break
		}
		dev := "sys/bus/pci/devices/" + bdf
		class, err := c.fs.ReadInt(dev + "/class")
		if err != nil || (class>>8 != 0x0300 && class>>8 != 0x0302) {
			continue
		}
		g := GPU{PCI: bdf, Class: fmt.Sprintf("0x%06x", class), NICs: []GPUNIC{}}
		g.VendorID = c.hexID(dev+"/vendor", bdf+" vendor")
		g.DeviceID = c.hexID(dev+"/device", bdf+" device")
		g.Vendor = gpuVendors[g.VendorID]
		g.Model = gpuModels[g.VendorID+":"+g.DeviceID]
		if v, ok := c.readInt(dev+"/numa_node", bdf+" NUMA node"); ok {
			g.NUMANode = intPtr(v)
		}
		if t, err := c.fs.Readlink(dev + "/driver"); err == nil {
			g.Driver = path.Base(t)
		}
		dir, err := c.fs.Resolve(dev)
		node, ok := pciPath(dir)
		if err != nil || !ok {
			c.note("GPU %s: not below a PCI host bridge; its distance to the NICs is unknown", bdf)
			out = append(out, g)
			continue
		}
		node.numa = valueOr(g.NUMANode, -1)
		for _, nn := range nicNodes {
			d, route := distance(node, nn.node, nodes)
			for j := range route {
				route[j].ACS = c.acs(route[j].PCI, acs)
			}
			g.NICs = append(g.NICs, GPUNIC{Interface: nn.nic.Interface, PCI: nn.nic.PCI, Distance: d, RDMA: len(nn.nic.RDMA) > 0, Bridges: route})
		}
		slices.SortStableFunc(g.NICs, func(x, y GPUNIC) int { return distanceRank(x.Distance) - distanceRank(y.Distance) })
		out = append(out, g)
	}
	return out
}

// acs reads a bridge's ACS control from its config space, once per run.
func (c *collector) acs(bdf string, seen map[string]*ACSState) *ACSState {
	if s, ok := seen[bdf]; ok {
		return s
	}
	seen[bdf] = nil
	rel := "sys/bus/pci/devices/" + bdf + "/config"
	b, err := c.fs.ReadFile(rel)
	if err != nil {
		c.noteErr(bdf+" config space (ACS)", err)
		return nil
	}
	a, err := hostfs.ParseACS(b)
	switch {
	case errors.Is(err, hostfs.ErrNoExtendedConfig) && len(b) <= 64:
		c.note("%s: ACS needs root (config space beyond 64 bytes)", bdf)
		return nil
	case errors.Is(err, hostfs.ErrNoACS):
		return nil
	case err != nil:
		c.note("%s: config space: %v", bdf, err)
		return nil
	}
	s := &ACSState{Control: fmt.Sprintf("0x%04x", a.Ctl), Enabled: a.Names(), Redirect: a.Redirects()}
	if s.Enabled == nil {
		s.Enabled = []string{}
	}
	seen[bdf] = s
	return s
}

func valueOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
