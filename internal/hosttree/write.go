package hosttree

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
)

// Write lays the host out below root as sys/… and proc/…, in the kernel's
// file names, link layout and value formats. root is created if missing;
// Write never overwrites a file, so give it an empty or absent directory.
// Equal hosts give byte-identical trees.
func (h *Host) Write(root string) error {
	if err := h.validate(); err != nil {
		return fmt.Errorf("host %q: %w", h.Hostname, err)
	}
	t := newTree()
	t.iommu = h.iommuGroups()
	h.addKernel(t)
	h.addCPUs(t)
	h.addCPUInfo(t)
	h.addNodes(t)
	for i := range h.NICs {
		if err := h.addNIC(t, &h.NICs[i]); err != nil {
			return fmt.Errorf("host %q: NIC %s: %w", h.Hostname, h.NICs[i].PCI.BDF, err)
		}
	}
	for i := range h.GPUs {
		if err := h.addGPU(t, &h.GPUs[i]); err != nil {
			return fmt.Errorf("host %q: GPU %s: %w", h.Hostname, h.GPUs[i].PCI.BDF, err)
		}
	}
	for i := range h.Virtual {
		h.addVirtual(t, &h.Virtual[i])
	}
	h.addIRQs(t)
	h.addSysctls(t)
	h.addProcesses(t)
	if err := t.write(root); err != nil {
		return fmt.Errorf("write host %q to %s: %w", h.Hostname, root, err)
	}
	return nil
}

func (h *Host) validate() error {
	var errs []error
	if h.Hostname == "" || h.Kernel == "" {
		errs = append(errs, errors.New("hostname and kernel are required"))
	}
	if len(h.CPUs) == 0 {
		errs = append(errs, errors.New("no CPUs"))
	}
	for i, c := range h.CPUs {
		if c.ID != i {
			errs = append(errs, fmt.Errorf("CPU at index %d has ID %d; IDs must run 0…n-1", i, c.ID))
			break
		}
	}
	n := len(h.CPUs)
	inRange := func(what string, cpus []int) {
		for _, c := range cpus {
			if c < 0 || c >= n {
				errs = append(errs, fmt.Errorf("%s names CPU %d of %d", what, c, n))
				return
			}
		}
	}
	irqs := make(map[int]bool)
	checkIRQ := func(q IRQ) {
		if irqs[q.Num] {
			errs = append(errs, fmt.Errorf("IRQ %d given twice", q.Num))
		}
		irqs[q.Num] = true
		what := fmt.Sprintf("IRQ %d", q.Num)
		inRange(what+" affinity", q.Affinity)
		inRange(what+" effective affinity", q.Effective)
		inRange(what+" hint", q.Hint)
		inRange(what+" counts", slices.Collect(maps.Keys(q.Counts)))
		if q.MSIX != "" {
			if _, err := parseBDF(q.MSIX); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
			}
		}
	}
	for _, q := range h.IRQs {
		checkIRQ(q)
	}
	names := make(map[string]bool)
	ifindex := make(map[int]bool)
	checkIface := func(nif NetIface) {
		if names[nif.Name] {
			errs = append(errs, fmt.Errorf("interface %s given twice", nif.Name))
		}
		names[nif.Name] = true
		if ifindex[nif.Ifindex] {
			errs = append(errs, fmt.Errorf("ifindex %d given twice", nif.Ifindex))
		}
		ifindex[nif.Ifindex] = true
	}
	bdfs := make(map[string]bool)
	hwmons := make(map[int]bool)
	for _, nic := range h.NICs {
		if bdfs[nic.PCI.BDF] {
			errs = append(errs, fmt.Errorf("NIC %s given twice", nic.PCI.BDF))
		}
		bdfs[nic.PCI.BDF] = true
		for _, d := range []PCIDevice{nic.PCI, nic.Bridge} {
			if _, err := parseBDF(d.BDF); err != nil {
				errs = append(errs, err)
			}
			for _, s := range []float64{d.MaxSpeed, d.CurSpeed} {
				if _, err := speedCode(s); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", d.BDF, err))
				}
			}
		}
		inRange("NIC "+nic.PCI.BDF+" local CPUs", nic.LocalCPUs)
		for _, q := range nic.IRQs {
			checkIRQ(q)
		}
		for _, nif := range nic.Interfaces {
			if nif.Kind != "" || nif.Master != "" || len(nif.Ports) > 0 {
				errs = append(errs, fmt.Errorf("interface %s of NIC %s: kind, master and ports are for virtual interfaces", nif.Name, nic.PCI.BDF))
			}
			checkIface(nif)
		}
		if nic.Hwmon != nil {
			if hwmons[nic.Hwmon.Index] {
				errs = append(errs, fmt.Errorf("hwmon%d given twice", nic.Hwmon.Index))
			}
			hwmons[nic.Hwmon.Index] = true
		}
	}
	for _, nif := range h.Virtual {
		checkIface(nif)
	}
	return errors.Join(errs...)
}

// iommuGroups numbers every PCI function in an IOMMU group of its own, in
// the order the host lists them, when the host has an IOMMU.
func (h *Host) iommuGroups() map[string]int {
	if h.IOMMU == "" {
		return nil
	}
	groups := map[string]int{}
	add := func(ds ...PCIDevice) {
		for _, d := range ds {
			if _, ok := groups[d.BDF]; !ok {
				groups[d.BDF] = len(groups)
			}
		}
	}
	for _, n := range h.NICs {
		add(n.Bridge)
		add(n.Switch...)
		add(n.PCI)
	}
	for _, g := range h.GPUs {
		add(g.Bridge)
		add(g.Switch...)
		add(g.PCI)
	}
	return groups
}

// nrCPUs is nr_cpu_ids: the width of every CPU mask.
func (h *Host) nrCPUs() int { return len(h.CPUs) }

func (h *Host) allCPUs() []int {
	all := make([]int, len(h.CPUs))
	for i := range all {
		all[i] = i
	}
	return all
}

// nodeCPUs returns the CPUs of NUMA node n, or every CPU for n < 0.
func (h *Host) nodeCPUs(n int) []int {
	if n < 0 {
		return h.allCPUs()
	}
	var cpus []int
	for _, c := range h.CPUs {
		if c.Node == n {
			cpus = append(cpus, c.ID)
		}
	}
	return cpus
}

func (h *Host) nodes() []int {
	var nodes []int
	for _, c := range h.CPUs {
		if !slices.Contains(nodes, c.Node) {
			nodes = append(nodes, c.Node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

func (h *Host) addKernel(t *tree) {
	t.attr("proc/sys/kernel/hostname", h.Hostname)
	t.attr("proc/sys/kernel/osrelease", h.Kernel)
}

func (h *Host) addSysctls(t *tree) {
	for _, k := range slices.Sorted(maps.Keys(h.Sysctls)) {
		t.attr("proc/sys/"+strings.ReplaceAll(k, ".", "/"), h.Sysctls[k])
	}
}

func (h *Host) addProcesses(t *tree) {
	for _, pid := range slices.Sorted(maps.Keys(h.Processes)) {
		t.attr("proc/"+strconv.Itoa(pid)+"/comm", h.Processes[pid])
	}
}

func (h *Host) addNodes(t *tree) {
	nodes := list(h.nodes())
	base := "sys/devices/system/node/"
	for _, f := range []string{"online", "possible", "has_cpu", "has_memory", "has_normal_memory"} {
		t.attr(base+f, nodes)
	}
	for _, n := range h.nodes() {
		cpus := h.nodeCPUs(n)
		d := fmt.Sprintf("%snode%d/", base, n)
		t.attr(d+"cpulist", list(cpus))
		t.attr(d+"cpumap", kernelMask(cpus, h.nrCPUs()))
	}
}

// addNIC writes the function, its bridge and switch ports, links from
// sys/bus and sys/class, its interfaces, sensors and RDMA devices.
func (h *Host) addNIC(t *tree, nic *NIC) error {
	local := nic.LocalCPUs
	if local == nil {
		local = h.nodeCPUs(nic.PCI.NUMANode)
	}
	var vectors []int
	for _, q := range nic.IRQs {
		vectors = append(vectors, q.Num)
	}
	devRel, err := h.addPath(t, nic.Bridge, nic.Switch, nic.PCI, local, vectors)
	if err != nil {
		return err
	}
	devDir := "sys/devices/" + devRel
	for i := range nic.Interfaces {
		nif := &nic.Interfaces[i]
		dir := devDir + "/net/" + nif.Name
		h.addIface(t, dir, nif)
		t.link(dir+"/device", "../../../"+nic.PCI.BDF)
		t.link("sys/class/net/"+nif.Name, "../../devices/"+devRel+"/net/"+nif.Name)
	}
	if hw := nic.Hwmon; hw != nil {
		name := "hwmon" + strconv.Itoa(hw.Index)
		dir := devDir + "/hwmon/" + name + "/"
		t.attr(dir+"name", hw.Name)
		t.attr(dir+"temp1_input", strconv.Itoa(hw.Input))
		if hw.Crit != 0 {
			t.attr(dir+"temp1_crit", strconv.Itoa(hw.Crit))
		}
		if hw.Highest != 0 {
			t.attr(dir+"temp1_highest", strconv.Itoa(hw.Highest))
		}
		if hw.Label != "" {
			t.attr(dir+"temp1_label", hw.Label)
		}
		t.link(dir+"device", "../../../"+nic.PCI.BDF)
		t.link("sys/class/hwmon/"+name, "../../devices/"+devRel+"/hwmon/"+name)
	}
	for _, rd := range nic.RDMA {
		dir := devDir + "/infiniband/" + rd.Name
		if err := h.addRDMA(t, dir, rd, nic.Interfaces); err != nil {
			return fmt.Errorf("RDMA device %s: %w", rd.Name, err)
		}
		t.link(dir+"/device", "../../../"+nic.PCI.BDF)
		t.link("sys/class/infiniband/"+rd.Name, "../../devices/"+devRel+"/infiniband/"+rd.Name)
	}
	return nil
}

// addGPU writes a GPU function below its root port and switch ports.
func (h *Host) addGPU(t *tree, g *GPU) error {
	_, err := h.addPath(t, g.Bridge, g.Switch, g.PCI, h.nodeCPUs(g.PCI.NUMANode), nil)
	return err
}

// addPath writes a function below its root port and the switch ports
// between them (each bridge's secondary bus is the next one's), with
// their sys/bus/pci links and drivers, and returns the function's
// directory below sys/devices. Ports shared by two functions (a switch
// holding a GPU and a NIC) are written once: equal content is no conflict.
func (h *Host) addPath(t *tree, root PCIDevice, chain []PCIDevice, dev PCIDevice, local, vectors []int) (string, error) {
	rootAddr, err := parseBDF(root.BDF)
	if err != nil {
		return "", err
	}
	bridges := append([]PCIDevice{root}, chain...)
	rel := rootAddr.hostBridge()
	for i, b := range bridges {
		self, err := parseBDF(b.BDF)
		if err != nil {
			return "", err
		}
		below := dev
		if i+1 < len(bridges) {
			below = bridges[i+1]
		}
		sec, err := parseBDF(below.BDF)
		if err != nil {
			return "", err
		}
		if b.Driver == "" {
			b.Driver = "pcieport"
		}
		if b.PortType == 0 && i == 0 {
			b.PortType = 4
		}
		rel += "/" + b.BDF
		if err := h.addPCI(t, "sys/devices/"+rel, b, true, self, sec, local, nil); err != nil {
			return "", fmt.Errorf("bridge %s: %w", b.BDF, err)
		}
		h.addBusLinks(t, rel, b)
	}
	self, err := parseBDF(dev.BDF)
	if err != nil {
		return "", err
	}
	rel += "/" + dev.BDF
	if err := h.addPCI(t, "sys/devices/"+rel, dev, false, self, bdf{}, local, vectors); err != nil {
		return "", err
	}
	h.addBusLinks(t, rel, dev)
	return rel, nil
}

// addBusLinks links a function from sys/bus/pci (devices and its
// driver's directory), its driver, and its IOMMU group.
func (h *Host) addBusLinks(t *tree, rel string, d PCIDevice) {
	dir := "sys/devices/" + rel
	up := strings.Repeat("../", strings.Count(rel, "/")+2) // from dir up to sys/
	t.link("sys/bus/pci/devices/"+d.BDF, "../../../devices/"+rel)
	if d.Driver != "" {
		t.link(dir+"/driver", up+"bus/pci/drivers/"+d.Driver)
		t.link("sys/bus/pci/drivers/"+d.Driver+"/"+d.BDF, "../../../../devices/"+rel)
	}
	if g, ok := t.iommu[d.BDF]; ok {
		grp := "sys/kernel/iommu_groups/" + strconv.Itoa(g)
		t.link(dir+"/iommu_group", up+"kernel/iommu_groups/"+strconv.Itoa(g))
		t.link(grp+"/devices/"+d.BDF, "../../../../devices/"+rel)
		t.attr(grp+"/type", h.IOMMU)
		t.attr(grp+"/reserved_regions", "0x00000000fee00000 0x00000000feefffff msi")
	}
}

// addPCI writes one function's attributes (drivers/pci/pci-sysfs.c). For a
// bridge, sec is the function below it (its secondary bus).
func (h *Host) addPCI(t *tree, dir string, d PCIDevice, isBridge bool, self, sec bdf, local []int, vectors []int) error {
	d = withPCIDefaults(d)
	a := func(name, v string) { t.attr(dir+"/"+name, v) }
	a("vendor", hexID(d.Vendor))
	a("device", hexID(d.Device))
	a("subsystem_vendor", hexID(d.SubsystemVendor))
	a("subsystem_device", hexID(d.SubsystemDevice))
	a("class", fmt.Sprintf("0x%06x", d.Class))
	a("revision", fmt.Sprintf("0x%02x", d.Revision))
	a("numa_node", strconv.Itoa(d.NUMANode))
	a("local_cpulist", list(local))
	a("local_cpus", kernelMask(local, h.nrCPUs()))
	a("irq", strconv.Itoa(d.LegacyIRQ))
	a("enable", "1")
	a("msi_bus", "1")
	a("broken_parity_status", "0")
	a("d3cold_allowed", "1")
	a("dma_mask_bits", "64")
	a("consistent_dma_mask_bits", "64")
	a("driver_override", "(null)")
	a("max_link_speed", h.linkSpeed(d.MaxSpeed))
	a("max_link_width", strconv.Itoa(d.MaxWidth))
	a("current_link_speed", h.linkSpeed(d.CurSpeed))
	a("current_link_width", strconv.Itoa(d.CurWidth))
	modalias := fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		d.Vendor, d.Device, d.SubsystemVendor, d.SubsystemDevice,
		byte(d.Class>>16), byte(d.Class>>8), byte(d.Class))
	a("modalias", modalias)
	uevent := ""
	if d.Driver != "" {
		uevent = "DRIVER=" + d.Driver + "\n"
	}
	uevent += fmt.Sprintf("PCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n",
		d.Class, d.Vendor, d.Device, d.SubsystemVendor, d.SubsystemDevice, d.BDF, modalias)
	t.file(dir+"/uevent", []byte(uevent))
	for _, v := range vectors {
		t.attr(dir+"/msi_irqs/"+strconv.Itoa(v), "msix")
	}
	if d.Config {
		cfg, err := configSpace(d, isBridge, self, sec, len(vectors))
		if err != nil {
			return err
		}
		t.file(dir+"/config", cfg)
	}
	return nil
}

func withPCIDefaults(d PCIDevice) PCIDevice {
	if d.MPSSupported == 0 {
		d.MPSSupported = max(256, d.MPS)
	}
	if d.MPS == 0 {
		d.MPS = 256
	}
	if d.MRRS == 0 {
		d.MRRS = 512
	}
	return d
}

// addIface writes a netdev's attributes (net/core/net-sysfs.c,
// Documentation/ABI/testing/sysfs-class-net).
func (h *Host) addIface(t *tree, dir string, nif *NetIface) {
	a := func(name, v string) { t.attr(dir+"/"+name, v) }
	typ := nif.Type
	if typ == 0 {
		typ = 1
	}
	iflink := nif.Iflink
	if iflink == 0 {
		iflink = nif.Ifindex
	}
	a("address", nif.Address)
	a("addr_len", "6")
	a("addr_assign_type", "0")
	if nif.Kind == "loopback" {
		a("broadcast", "00:00:00:00:00:00")
	} else {
		a("broadcast", "ff:ff:ff:ff:ff:ff")
	}
	running := nif.Flags&1 != 0 // IFF_UP: carrier, speed and duplex read EINVAL otherwise
	if running {
		if nif.Carrier {
			a("carrier", "1")
		} else {
			a("carrier", "0")
		}
		if nif.Speed != 0 {
			a("speed", strconv.Itoa(nif.Speed))
		}
		if nif.Duplex != "" {
			a("duplex", nif.Duplex)
		}
	}
	a("carrier_changes", strconv.Itoa(nif.CarrierChanges))
	a("carrier_up_count", strconv.Itoa((nif.CarrierChanges+1)/2))
	a("carrier_down_count", strconv.Itoa(nif.CarrierChanges/2))
	a("dev_id", fmt.Sprintf("0x%x", nif.DevID))
	a("dev_port", strconv.Itoa(nif.DevPort))
	a("dormant", "0")
	a("flags", fmt.Sprintf("0x%x", nif.Flags))
	a("gro_flush_timeout", "0")
	a("ifalias", "")
	a("ifindex", strconv.Itoa(nif.Ifindex))
	a("iflink", strconv.Itoa(iflink))
	a("link_mode", "0")
	a("mtu", strconv.Itoa(nif.MTU))
	if nif.NameAssignType != 0 {
		a("name_assign_type", strconv.Itoa(nif.NameAssignType))
	}
	a("netdev_group", "0")
	a("operstate", nif.Operstate)
	if nif.PhysPortName != "" {
		a("phys_port_name", nif.PhysPortName)
	}
	a("proto_down", "0")
	a("testing", "0")
	a("tx_queue_len", strconv.Itoa(nif.TxQueueLen))
	a("type", strconv.Itoa(typ))
	t.file(dir+"/uevent", []byte(fmt.Sprintf("INTERFACE=%s\nIFINDEX=%d\n", nif.Name, nif.Ifindex)))
	h.addEthtool(t, nif)
	h.addDCB(t, dir, nif)
	for _, s := range []string{"rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "rx_missed_errors",
		"tx_bytes", "tx_packets", "tx_errors", "tx_dropped", "collisions", "multicast"} {
		a("statistics/"+s, "0")
	}
	zero := kernelMask(nil, h.nrCPUs())
	for i := range nif.RxQueues {
		q := fmt.Sprintf("%s/queues/rx-%d/", dir, i)
		t.attr(q+"rps_cpus", zero)
		t.attr(q+"rps_flow_cnt", "0")
	}
	for i := range nif.TxQueues {
		q := fmt.Sprintf("%s/queues/tx-%d/", dir, i)
		t.attr(q+"tx_maxrate", "0")
		t.attr(q+"tx_timeout", "0")
		if nif.Kind == "" { // xps_cpus reads ENOENT on single-queue virtual devices
			t.attr(q+"xps_cpus", zero)
		}
	}
}

// addVirtual writes an interface without a device below
// sys/devices/virtual/net, with bridge ports and masters linked as sysfs
// links them.
func (h *Host) addVirtual(t *tree, nif *NetIface) {
	rel := "virtual/net/" + nif.Name
	dir := "sys/devices/" + rel
	h.addIface(t, dir, nif)
	t.link("sys/class/net/"+nif.Name, "../../devices/"+rel)
	if nif.Kind == "bridge" {
		id := "8000." + strings.ReplaceAll(nif.Address, ":", "")
		for f, v := range map[string]string{
			"bridge_id": id, "root_id": id, "stp_state": "0", "forward_delay": "0",
			"hello_time": "200", "max_age": "2000", "ageing_time": "30000", "vlan_filtering": "0",
		} {
			t.attr(dir+"/bridge/"+f, v)
		}
		for _, p := range nif.Ports {
			t.link(dir+"/brif/"+p, "../../"+p+"/brport")
			t.link(dir+"/lower_"+p, "../"+p)
		}
	}
	if nif.Master != "" {
		t.link(dir+"/master", "../"+nif.Master)
		t.link(dir+"/upper_"+nif.Master, "../"+nif.Master)
		t.attr(dir+"/brport/state", "3")
		t.attr(dir+"/brport/port_no", "0x1")
		t.attr(dir+"/brport/path_cost", "2")
	}
}

// addRDMA writes an RDMA device (drivers/infiniband/core/sysfs.c).
func (h *Host) addRDMA(t *tree, dir string, rd RDMADevice, ifaces []NetIface) error {
	a := func(name, v string) { t.attr(dir+"/"+name, v) }
	nodeType := rd.NodeType
	if nodeType == "" {
		nodeType = "1: CA"
	}
	sysGUID := rd.SysImageGUID
	if sysGUID == "" {
		sysGUID = rd.NodeGUID
	}
	a("fw_ver", rd.FWVer)
	a("board_id", rd.BoardID)
	a("hca_type", rd.HCAType)
	a("node_guid", rd.NodeGUID)
	a("sys_image_guid", sysGUID)
	a("node_type", nodeType)
	a("node_desc", h.Hostname+" "+rd.Name)
	for _, p := range rd.Ports {
		pd := fmt.Sprintf("ports/%d/", p.Num)
		a(pd+"state", p.State)
		a(pd+"phys_state", p.PhysState)
		a(pd+"rate", p.Rate)
		a(pd+"link_layer", p.LinkLayer)
		a(pd+"lid", "0x0")
		a(pd+"sm_lid", "0x0")
		a(pd+"lid_mask_count", "0")
		a(pd+"sm_sl", "0")
		a(pd+"cap_mask", "0x00010000")
		gids := p.GIDs
		if gids == nil && p.Netdev != "" {
			for _, nif := range ifaces {
				if nif.Name == p.Netdev {
					gids = LinkLocalGIDs(nif.Address, p.Netdev)
				}
			}
		}
		for _, g := range gids {
			text, err := gidText(g.Addr)
			if err != nil {
				return fmt.Errorf("port %d GID %d: %w", p.Num, g.Index, err)
			}
			n := strconv.Itoa(g.Index)
			a(pd+"gids/"+n, text)
			a(pd+"gid_attrs/types/"+n, g.Type)
			a(pd+"gid_attrs/ndevs/"+n, g.Netdev)
		}
		if len(gids) > 0 {
			// The table's next entry exists and reads zero, as the
			// kernel's unused entries do.
			a(pd+"gids/"+strconv.Itoa(gids[len(gids)-1].Index+1), "0000:0000:0000:0000:0000:0000:0000:0000")
		}
		for _, c := range []struct {
			dir string
			m   map[string]uint64
		}{{"counters", p.Counters}, {"hw_counters", p.HWCounters}} {
			for _, k := range slices.Sorted(maps.Keys(c.m)) {
				a(pd+c.dir+"/"+k, strconv.FormatUint(c.m[k], 10))
			}
		}
	}
	return nil
}

// LinkLocalGIDs are the GIDs mlx5 gives a netdev without IP addresses:
// its link-local address as RoCE v1 (index 0) and RoCE v2 (index 1).
func LinkLocalGIDs(mac, netdev string) []GIDEntry {
	ll, ok := linkLocal(mac)
	if !ok {
		return nil
	}
	return []GIDEntry{{0, ll, "IB/RoCE v1", netdev}, {1, ll, "RoCE v2", netdev}}
}

// RoCEGIDs are the GIDs of a netdev with IPv4 addresses, as mlx5 fills
// the table: the link-local pair, then a v1 and a v2 entry per address.
func RoCEGIDs(mac, netdev string, ipv4 ...string) []GIDEntry {
	g := LinkLocalGIDs(mac, netdev)
	for _, a := range ipv4 {
		g = append(g, GIDEntry{len(g), a, "IB/RoCE v1", netdev}, GIDEntry{len(g) + 1, a, "RoCE v2", netdev})
	}
	return g
}

// gidText prints an address as the kernel prints a GID (%pI6: eight
// groups of four hex digits), IPv4 addresses mapped into ::ffff:0:0/96.
func gidText(addr string) (string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "", err
	}
	b := ip.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x%02x", b[i], b[i+1])
	}
	return sb.String(), nil
}

// linkLocal is the fe80::/64 address of a MAC's EUI-64.
func linkLocal(mac string) (string, bool) {
	var b [6]byte
	if _, err := fmt.Sscanf(mac, "%02x:%02x:%02x:%02x:%02x:%02x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]); err != nil {
		return "", false
	}
	return fmt.Sprintf("fe80::%02x%02x:%02xff:fe%02x:%02x%02x", b[0]^2, b[1], b[2], b[3], b[4], b[5]), true
}

// addEthtool writes an interface's live ethtool facts where a snapshot
// keeps them.
func (h *Host) addEthtool(t *tree, nif *NetIface) {
	if nif.Ethtool == nil {
		return
	}
	files, err := nif.Ethtool.Files()
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("ethtool facts of %s: %w", nif.Name, err))
		return
	}
	for p, b := range files {
		t.file(ethtool.Dir(nif.Name)+"/"+p, b)
	}
}

// addDCB writes an interface's ECN switches (MLNX_OFED mlx5's
// ecn/roce_{np,rp}/enable/<prio>) and its DCB facts where a snapshot keeps
// them.
func (h *Host) addDCB(t *tree, dir string, nif *NetIface) {
	if e := nif.ECN; e != nil {
		for prio := range 8 {
			t.attr(fmt.Sprintf("%s/ecn/roce_np/enable/%d", dir, prio), bit(e.NP[prio]))
			t.attr(fmt.Sprintf("%s/ecn/roce_rp/enable/%d", dir, prio), bit(e.RP[prio]))
		}
	}
	if nif.DCB == nil {
		return
	}
	files, err := nif.DCB.Files()
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("DCB facts of %s: %w", nif.Name, err))
		return
	}
	for p, b := range files {
		t.file(dcb.Dir(nif.Name)+"/"+p, b)
	}
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
