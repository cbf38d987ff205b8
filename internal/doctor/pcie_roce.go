package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/inventory"
)

// mrrsWant is the Max_Read_Request_Size NVIDIA recommends for RDMA NICs of
// 100 Gbit/s and more: a NIC sending at line rate reads host memory in
// requests of at most MRRS bytes, and small requests cost completions.
const mrrsWant = 4096

// rdmaRate is the fastest RDMA port rate of a NIC, or its line rate.
func rdmaRate(v *nicView) float64 {
	r := float64(v.line)
	for _, p := range v.RDMA {
		r = max(r, p.RateGbps)
	}
	return r
}

// pcieMRRSSmall: an RDMA NIC of 100 Gbit/s or more reads host memory in
// requests smaller than 4096 bytes.
func pcieMRRSSmall(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		p := v.PCIe
		if len(v.RDMA) == 0 || p == nil || p.MRRS == nil || *p.MRRS >= mrrsWant || rdmaRate(v) < 100 {
			continue
		}
		mrrs := *p.MRRS
		out = append(out, Finding{
			ID: "pcie.mrrs_small", Severity: Info, Subject: v.Interface,
			Summary: fmt.Sprintf("%s (%s) reads host memory in PCIe requests of at most %d bytes (MRRS): at %s Gbit/s RDMA a NIC reads at line rate, and NVIDIA recommends MRRS %d for 100 Gbit/s and faster",
				v.Interface, v.PCI, mrrs, trimFloat(rdmaRate(v)), mrrsWant),
			Evidence: map[string]any{"pci": v.PCI, "mrrs_bytes": mrrs, "recommended_bytes": mrrsWant, "rate_gbps": rdmaRate(v)},
			Fix: []Fix{
				do(fmt.Sprintf("Set MRRS %d: Device Control bits 14:12 to 5, the other bits kept. Caveat: the kernel and firmware may set it again (a reset, a driver reload, pci=pcie_bus_* options), and some platforms misbehave with large read requests: try it on one host first", mrrsWant),
					"setpci", "-s", v.PCI, "CAP_EXP+08.w=5000:7000").
					persist("setpci does not survive a reboot: run it from a systemd unit or udev rule at boot").
					verify("Read it back", "sh", "-c", fmt.Sprintf("lspci -s %s -vvv | grep MaxReadReq", v.PCI)),
				tuneFix(v.Interface),
			},
		})
	}
	return out
}

// pcieACSRedirect: a bridge between a GPU and an RDMA NIC under one PCIe
// switch redirects peer-to-peer requests or completions to the root
// complex: GPUDirect RDMA crosses the CPU instead of the switch.
func pcieACSRedirect(d *diag) []Finding {
	var out []Finding
	for _, g := range d.inv.GPUs {
		for _, n := range g.NICs {
			if !n.RDMA || !d.selected(n.Interface) || (n.Distance != "PIX" && n.Distance != "PXB") {
				continue
			}
			var redirect []string
			for _, b := range n.Bridges {
				if b.PeerToPeer && b.ACS != nil && b.ACS.Redirect {
					redirect = append(redirect, b.PCI)
				}
			}
			if len(redirect) == 0 {
				continue
			}
			fix := []Fix{
				do("Turn ACS redirect off on those ports: the durable way is the kernel parameter pci=disable_acs_redir=" + strings.Join(redirect, ";") + " (Linux 5.1 and later; in GRUB_CMDLINE_LINUX, then update-grub and reboot), or the BIOS option that disables ACS. Caveat: without ACS the IOMMU can no longer isolate the devices below the switch from each other (one IOMMU group)"),
			}
			for _, b := range redirect {
				fix = append(fix, do("Or clear request and completion redirect on "+b+" now (lost at reboot)", "setpci", "-s", b, "ECAP_ACS+0x6.w=0000:000c").
					verify("Read it back", "sh", "-c", fmt.Sprintf("lspci -s %s -vvv | grep ACSCtl", b)))
			}
			fix = append(fix, do("Then check the route GPUDirect takes", "nvidia-smi", "topo", "-m"))
			out = append(out, Finding{
				ID: "pcie.acs_redirect", Severity: Warning, Subject: g.PCI,
				Summary: fmt.Sprintf("GPU %s%s and %s sit %s apart, below one PCIe switch, but ACS redirect is on at %s: GPUDirect RDMA between them goes up to the root complex and back instead of across the switch",
					g.PCI, gpuName(g), n.Interface, n.Distance, strings.Join(redirect, ", ")),
				Evidence: map[string]any{"gpu": g.PCI, "interface": n.Interface, "distance": n.Distance, "redirecting_bridges": redirect},
				Fix:      fix,
			})
		}
	}
	return out
}

// gpuNICFar: a GPU's nearest RDMA NIC is across the socket interconnect
// (SYS: warning) or across host bridges (NODE: info).
func gpuNICFar(d *diag) []Finding {
	var out []Finding
	for _, g := range d.inv.GPUs {
		if g.Vendor != "NVIDIA" && g.Vendor != "AMD" {
			continue // display adapters (ASPEED, Matrox) do no GPUDirect
		}
		i := slices.IndexFunc(g.NICs, func(n inventory.GPUNIC) bool { return n.RDMA })
		if i < 0 {
			continue
		}
		near := g.NICs[i]
		if !d.selected(near.Interface) {
			continue
		}
		sev := Warning
		switch near.Distance {
		case "SYS":
		case "NODE":
			sev = Info
		default:
			continue
		}
		ev := map[string]any{"gpu": g.PCI, "nearest_rdma_nic": near.Interface, "distance": near.Distance}
		var nicNode *int
		for _, n := range d.inv.NICs {
			if n.Interface == near.Interface {
				nicNode = n.NUMANode
			}
		}
		where := "the NIC's socket"
		if nicNode != nil && *nicNode >= 0 {
			where = "NUMA node " + strconv.Itoa(*nicNode)
			ev["nic_numa_node"] = *nicNode
		}
		if g.NUMANode != nil {
			ev["gpu_numa_node"] = *g.NUMANode
		}
		fix := []Fix{
			do(fmt.Sprintf("Move the GPU to a slot on %s, behind the same PCIe switch as %s if the board has one (PIX), or fit an RDMA NIC in a slot next to the GPU", where, near.Interface)).
				verify("Then check the matrix", "nvidia-smi", "topo", "-m"),
		}
		if j := slices.IndexFunc(g.NICs, func(n inventory.GPUNIC) bool { return !n.RDMA }); j >= 0 && distanceBetter(g.NICs[j].Distance, near.Distance) {
			fix = append(fix, do(fmt.Sprintf("%s is %s from this GPU but has no RDMA device: a RoCE-capable NIC there would be nearer", g.NICs[j].Interface, g.NICs[j].Distance)))
		}
		fix = append(fix, do("Until then, keep the GPU's traffic on the NIC's socket: NCCL picks the nearest NIC itself; NCCL_NET_GDR_LEVEL decides whether GPUDirect is used this far"))
		summary := fmt.Sprintf("GPU %s%s is %s from the nearest RDMA NIC, %s: GPUDirect RDMA between them crosses the socket interconnect (UPI/Infinity Fabric), which costs bandwidth and latency", g.PCI, gpuName(g), near.Distance, near.Interface)
		if near.Distance == "NODE" {
			summary = fmt.Sprintf("GPU %s%s is NODE from the nearest RDMA NIC, %s: on one socket but behind different PCIe host bridges, so GPUDirect RDMA between them crosses the CPU", g.PCI, gpuName(g), near.Interface)
		}
		out = append(out, Finding{ID: "gpu.nic_far", Severity: sev, Subject: g.PCI, Summary: summary, Evidence: ev, Fix: fix})
	}
	return out
}

// distanceBetter reports whether distance a is nearer than b.
func distanceBetter(a, b string) bool {
	order := []string{"PIX", "PXB", "PHB", "NODE", "SYS"}
	return slices.Index(order, a) < slices.Index(order, b)
}

// gpuName is " (NVIDIA A100 PCIe 40GB)" or "".
func gpuName(g inventory.GPU) string {
	name := strings.TrimSpace(g.Vendor + " " + g.Model)
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// selected reports whether a NIC is among those judged.
func (d *diag) selected(iface string) bool {
	return slices.ContainsFunc(d.nics, func(v *nicView) bool { return v.Interface == iface })
}

// iommuTranslated: the IOMMU translates an RDMA NIC's DMA; every page the
// NIC touches goes through the IOTLB.
func iommuTranslated(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if len(v.RDMA) == 0 || !v.IOMMU.Translated() {
			continue
		}
		group := strconv.Itoa(v.IOMMU.Group)
		out = append(out, Finding{
			ID: "iommu.translated", Severity: Info, Subject: v.Interface,
			Summary: fmt.Sprintf("The IOMMU translates %s's DMA (IOMMU group %s, type %s): each page the RDMA NIC reads or writes goes through the IOTLB, whose misses cost latency and bandwidth at 100 Gbit/s; NVIDIA's RDMA guides run the IOMMU in passthrough (iommu=pt)",
				v.Interface, group, v.IOMMU.Type),
			Evidence: map[string]any{"pci": v.PCI, "iommu_group": v.IOMMU.Group, "type": v.IOMMU.Type},
			Fix: []Fix{
				do("Boot with the kernel parameter iommu=pt (devices keep identity mappings; VFIO still isolates what it assigns). On Debian and Ubuntu add it to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub and reboot; on RHEL and its kin:",
					"grubby", "--update-kernel=ALL", "--args=iommu=pt").
					verify("After the reboot, the group's type reads identity", "cat", "/sys/kernel/iommu_groups/"+group+"/type"),
				do("On Linux 5.11 and later one group can change without a reboot: unbind its driver, write identity to /sys/kernel/iommu_groups/" + group + "/type, bind it again"),
			},
		})
	}
	return out
}
