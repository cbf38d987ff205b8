package inventory

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/netdev"
)

// nicState is a NIC being collected, with what later passes need.
type nicState struct {
	nic    NIC
	pciDir string // canonical path of the PCI function, "" for virtual
	irqs   []int  // from msi_irqs (or the legacy irq)
}

func (c *collector) nics(inv *Inventory) error {
	names, err := c.fs.ReadDir("sys/class/net")
	if err != nil {
		return fmt.Errorf("no network interfaces to inspect: %w", err)
	}
	var states []*nicState
	for _, name := range names {
		st := c.nic(name)
		if st.pciDir != "" {
			states = append(states, st)
		} else {
			inv.Virtual = append(inv.Virtual, st.nic)
		}
	}
	c.cardPorts(states)
	c.irqs(states)
	for _, st := range states {
		inv.NICs = append(inv.NICs, st.nic)
	}
	c.emptyCages(inv.NICs)
	return nil
}

func (c *collector) nic(name string) *nicState {
	base := "sys/class/net/" + name
	st := &nicState{nic: NIC{Interface: name, IRQs: []IRQ{}, RDMA: []RDMAPort{}}}
	n := &st.nic
	c.netClass(n, base)
	n.Queues = c.queues(base)
	if c.live != nil {
		if l, ok := c.live.Links[name]; ok {
			n.Qdisc = qdiscOf(l)
			n.DefaultRoute = l.DefaultRoute
		}
	}
	dev, err := c.fs.Resolve(base + "/device")
	if err != nil {
		n.Kind = c.virtualKind(name, base)
		if c.opts.Ethtool == nil || (c.opts.EthtoolVirtual != nil && c.opts.EthtoolVirtual(name)) {
			if f := c.ethtoolFacts(name); f != nil {
				c.applyEthtool(n, f)
			}
		}
		return st
	}
	pciDir, err := pciFunctionOf(dev)
	if err != nil {
		n.Kind = "other"
		c.note("%s: its device %s is not on PCI; listed with the virtual interfaces", name, path.Base(dev))
		return st
	}
	st.pciDir = pciDir
	n.Kind = "pci"
	n.PCI = path.Base(pciDir)
	c.pciFacts(n, base, pciDir)
	n.PCIe = c.pcie(pciDir)
	st.irqs = c.msiIRQs(pciDir)
	n.TempC, n.TempCritC = c.temperature(pciDir)
	n.RDMA = c.rdma(pciDir, n)
	f := c.ethtoolFacts(name)
	c.applyEthtool(n, f)
	c.roce(n, base, pciDir, f)
	return st
}

// qdiscOf sums up a link's egress qdiscs: the root's kind and what caps
// the link (netdev.Link.Shaper); nil without a root qdisc.
func qdiscOf(l netdev.Link) *Qdisc {
	if l.Qdisc == nil {
		return nil
	}
	q := &Qdisc{Kind: l.Qdisc.Kind}
	s := l.Shaper()
	if s == nil {
		return q
	}
	rate := float64(s.RateBitsPerSec) / 1e9
	q.Shaper = &Shaper{Kind: s.Kind, Handle: s.Handle, RateGbps: rate, PerFlow: s.PerFlow, OverheadBytes: s.OverheadBytes, Detail: s.Detail}
	if !s.PerFlow {
		q.RateGbps = floatPtr(rate)
	}
	// The lab declares the rate it shaped its link to in the alias; a
	// shaper at another rate (a fault planted since) is not the one
	// declared.
	if bps, ok := netdev.DeclaredLineRate(l.Alias); ok && !s.PerFlow {
		d := float64(bps) - float64(s.RateBitsPerSec)
		q.Shaper.DeclaredLineRate = d < 1e-3*float64(bps) && d > -1e-3*float64(bps)
	}
	return q
}

// netClass reads /sys/class/net/IF through prometheus/procfs, which leaves
// a garbage value nil rather than failing the interface.
func (c *collector) netClass(n *NIC, base string) {
	nc, err := c.sys.NetClassByIface(n.Interface)
	c.fs.RecordDir(base)
	if err != nil {
		c.noteErr(n.Interface+" attributes", err)
		return
	}
	if nc.MTU != nil {
		n.MTU = intPtr(int(*nc.MTU))
	}
	// The kernel prints -1 (or fails with EINVAL) when the speed is unknown,
	// e.g. with the link down.
	if nc.Speed != nil && *nc.Speed > 0 {
		n.SpeedMbps = intPtr(int(*nc.Speed))
	}
	n.Operstate = nc.OperState
	if n.Operstate == "" {
		n.Operstate = "unknown"
	}
}

func (c *collector) queues(base string) Queues {
	var q Queues
	names, err := c.fs.ReadDir(base + "/queues")
	if err != nil {
		c.noteErr("queues of "+path.Base(base), err)
		return q
	}
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "rx-"):
			q.RX++
		case strings.HasPrefix(n, "tx-"):
			q.TX++
		}
	}
	return q
}

// virtualKind names a device-less interface: from rtnetlink when known,
// else from sysfs (type 772 is ARPHRD_LOOPBACK; DEVTYPE in uevent).
func (c *collector) virtualKind(name, base string) string {
	if c.live != nil {
		if l, ok := c.live.Links[name]; ok && l.Kind != "" {
			if l.Kind == "device" && name == "lo" {
				return "loopback"
			}
			return l.Kind
		}
	}
	if t, err := c.fs.ReadInt(base + "/type"); err == nil && t == 772 {
		return "loopback"
	}
	if ue, err := c.fs.ReadString(base + "/uevent"); err == nil {
		for line := range strings.SplitSeq(ue, "\n") {
			if v, ok := strings.CutPrefix(line, "DEVTYPE="); ok {
				return v
			}
		}
	}
	return "virtual"
}

func (c *collector) pciFacts(n *NIC, base, pciDir string) {
	n.VendorID = c.hexID(pciDir+"/vendor", n.PCI+" vendor")
	n.DeviceID = c.hexID(pciDir+"/device", n.PCI+" device")
	n.Model = modelName(n.VendorID, n.DeviceID)
	if v, ok := c.readInt(pciDir+"/numa_node", n.PCI+" NUMA node"); ok {
		n.NUMANode = intPtr(v)
	}
	if l, err := c.fs.ReadCPUList(pciDir + "/local_cpulist"); err == nil {
		n.LocalCPUs = l
	} else {
		c.noteErr(n.PCI+" local CPUs", err)
	}
	// The netdev's own device names the driver users know from ethtool -i
	// (virtio_net rather than virtio-pci).
	if t, err := c.fs.Readlink(base + "/device/driver"); err == nil {
		n.Driver = path.Base(t)
	} else {
		c.noteErr(n.Interface+" driver", err)
	}
}

// msiIRQs lists the function's MSI/MSI-X vectors; a function without
// them uses its legacy INTx line ("irq"). Matching /proc/interrupts by
// name is the fallback only (see irqs).
func (c *collector) msiIRQs(pciDir string) []int {
	names, err := c.fs.ReadDir(pciDir + "/msi_irqs")
	var irqs []int
	if err == nil {
		for _, n := range names {
			if v, err := strconv.Atoi(n); err == nil {
				irqs = append(irqs, v)
			}
		}
		slices.Sort(irqs)
		return irqs
	}
	c.noteErr(path.Base(pciDir)+" MSI IRQs", err)
	if v, err := c.fs.ReadInt(pciDir + "/irq"); err == nil && v > 0 {
		return []int{int(v)}
	}
	return nil
}

// cardPorts links the interfaces of one card (same bus:device).
func (c *collector) cardPorts(states []*nicState) {
	byCard := map[string][]string{}
	for _, st := range states {
		byCard[cardOf(st.nic.PCI)] = append(byCard[cardOf(st.nic.PCI)], st.nic.Interface)
	}
	for _, st := range states {
		st.nic.CardPorts = byCard[cardOf(st.nic.PCI)]
	}
}

// irqs reads /proc/interrupts once for every NIC's IRQs, then each IRQ's
// affinity. On a function carrying several interfaces (Chelsio puts both
// ports on one), an IRQ whose name holds another interface's name belongs
// to that interface only.
func (c *collector) irqs(states []*nicState) {
	want := map[int]bool{}
	noMSI := []*nicState{}
	for _, st := range states {
		for _, irq := range st.irqs {
			want[irq] = true
		}
		if len(st.irqs) == 0 {
			noMSI = append(noMSI, st)
		}
	}
	in, err := c.fs.Interrupts(func(irq int, name string) bool {
		if want[irq] {
			return true
		}
		for _, st := range noMSI {
			if nameMatches(name, st.nic) {
				return true
			}
		}
		return false
	})
	if err != nil {
		c.noteErr("IRQ counts", err)
		in = &hostfs.Interrupts{IRQs: map[int]hostfs.IRQCounts{}}
	}
	for _, st := range noMSI {
		for irq, ic := range in.IRQs {
			if nameMatches(ic.Name, st.nic) {
				st.irqs = append(st.irqs, irq)
			}
		}
		slices.Sort(st.irqs)
	}
	siblings := map[string][]string{}
	for _, st := range states {
		siblings[st.nic.PCI] = append(siblings[st.nic.PCI], st.nic.Interface)
	}
	for _, st := range states {
		for _, irq := range st.irqs {
			ic := in.IRQs[irq]
			if belongsElsewhere(ic.Name, st.nic.Interface, siblings[st.nic.PCI]) {
				continue
			}
			st.nic.IRQs = append(st.nic.IRQs, c.irq(irq, ic))
		}
	}
}

func nameMatches(name string, n NIC) bool {
	return strings.Contains(name, n.PCI) || containsToken(name, n.Interface)
}

func belongsElsewhere(name, iface string, siblings []string) bool {
	for _, s := range siblings {
		if s != iface && containsToken(name, s) && !containsToken(name, iface) {
			return true
		}
	}
	return false
}

func (c *collector) irq(n int, ic hostfs.IRQCounts) IRQ {
	dir := "proc/irq/" + strconv.Itoa(n)
	q := IRQ{IRQ: n, Name: ic.Name, Counts: map[string]uint64{}, Total: ic.Total}
	for cpu, v := range ic.Counts {
		q.Counts[strconv.Itoa(cpu)] = v
	}
	aff, err := c.fs.ReadCPUList(dir + "/smp_affinity_list")
	if err != nil {
		c.noteErr(fmt.Sprintf("affinity of IRQ %d", n), err)
	}
	q.Affinity = aff
	if eff, err := c.fs.ReadCPUList(dir + "/effective_affinity_list"); err == nil {
		q.Effective = eff
	} else {
		c.noteErr(fmt.Sprintf("effective affinity of IRQ %d", n), err)
	}
	if q.Affinity == nil {
		q.Affinity = []int{}
	}
	return q
}

// temperature reads the hottest temp*_input of the function's hwmon
// devices, with that sensor's crit. mlx5 registers hwmon on function 0
// only, so the other functions of a card fall back to it.
func (c *collector) temperature(pciDir string) (*float64, *float64) {
	if t, crit, ok := c.hwmonTemp(pciDir); ok {
		return t, crit
	}
	if f0 := cardOf(pciDir) + ".0"; f0 != pciDir {
		if t, crit, ok := c.hwmonTemp(f0); ok {
			return t, crit
		}
	}
	return nil, nil
}

func (c *collector) hwmonTemp(pciDir string) (*float64, *float64, bool) {
	mons, err := c.fs.ReadDir(pciDir + "/hwmon")
	if err != nil {
		return nil, nil, false
	}
	var best, crit *float64
	for _, m := range mons {
		dir := pciDir + "/hwmon/" + m
		files, err := c.fs.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, f := range files {
			id, ok := strings.CutSuffix(f, "_input")
			if !ok || !strings.HasPrefix(id, "temp") {
				continue
			}
			v, err := c.fs.ReadInt(dir + "/" + f)
			if err != nil {
				c.noteErr("NIC temperature", err)
				continue
			}
			t := float64(v) / 1000
			if best == nil || t > *best {
				best, crit = &t, nil
				if cv, err := c.fs.ReadInt(dir + "/" + id + "_crit"); err == nil && cv > 0 {
					crit = floatPtr(float64(cv) / 1000)
				}
			}
		}
	}
	return best, crit, best != nil
}

// AffinityOrEffective returns where an IRQ is routed: the effective
// affinity when the kernel reports it, else the configured affinity.
func (q IRQ) AffinityOrEffective() []int {
	if len(q.Effective) > 0 {
		return q.Effective
	}
	return q.Affinity
}

// ServedOn returns the CPUs that served at least share (0..1) of the
// IRQ's interrupts since boot. A small share is noise from before the
// affinity was set, so callers pass e.g. 0.01.
func (q IRQ) ServedOn(share float64) []int {
	var out []int
	for k, v := range q.Counts {
		if q.Total > 0 && float64(v)/float64(q.Total) >= share {
			if cpu, err := strconv.Atoi(k); err == nil {
				out = append(out, cpu)
			}
		}
	}
	slices.Sort(out)
	return out
}

// FormatCPUs is cpulist.Format, for callers that print IRQ CPU sets.
func FormatCPUs(cpus []int) string { return cpulist.Format(cpus) }

// emptyCages rewords "no module data: the driver reads no module EEPROM"
// for a port whose card's other port did give its module: the driver
// reads module EEPROM, so this cage is most likely empty (cxgb4 answers
// EOPNOTSUPP for an empty cage).
func (c *collector) emptyCages(nics []NIC) {
	const unsupported = ": no module data: the driver reads no module EEPROM (EOPNOTSUPP)"
	for i, note := range c.notes {
		iface, ok := strings.CutSuffix(note, unsupported)
		if !ok {
			continue
		}
		for _, n := range nics {
			if n.Interface == iface {
				for _, o := range nics {
					if o.Interface != iface && slices.Contains(n.CardPorts, o.Interface) && o.Transceiver != nil && o.Transceiver.Module != nil {
						c.notes[i] = fmt.Sprintf("%s: no module data (EOPNOTSUPP): the cage is most likely empty, as the same card read the module of %s", iface, o.Interface)
						break
					}
				}
			}
		}
	}
}
