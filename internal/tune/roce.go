package tune

import (
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
)

// The lossless RoCE changes `tune --roce` makes, and only when asked by
// name: PFC, trust and ECN must match what the switches do, so tune never
// guesses them from findings alone.
const (
	KindMRRS  Kind = "mrrs"      // Device Control's MRRS field in the function's config space
	KindTrust Kind = "dcb_trust" // DCB trust (apptrust, or mlx5's DSCP APP entries) and DSCP 26's priority
	KindPFC   Kind = "dcb_pfc"   // DCB PFC enabled priorities
	KindECN   Kind = "ecn"       // /sys/class/net/IF/ecn/roce_{np,rp}/enable/PRIO
)

// mrrsWant is the Max_Read_Request_Size tune --roce sets on RDMA NICs of
// 100 Gbit/s and more (NVIDIA's recommendation; doctor's pcie.mrrs_small).
const mrrsWant = 4096

// What RoCE kinds may touch (checkChange).
var (
	ecnPathRE  = regexp.MustCompile(`^/sys/class/net/([^/]{1,15})/ecn/(roce_np|roce_rp)/enable/([0-7])$`)
	mrrsPathRE = regexp.MustCompile(`^/sys/bus/pci/devices/([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])/config$`)
)

// checkRoCEChange is checkChange for the RoCE kinds; ok is false for any
// other kind.
func checkRoCEChange(c *Change) (ok bool, err error) {
	switch c.Kind {
	case KindECN:
		m := ecnPathRE.FindStringSubmatch(c.Path)
		if m == nil || !ifaceName(m[1]) {
			return true, fmt.Errorf("an ECN change names %q, which is not an interface's ecn/roce_np or roce_rp switch", c.Path)
		}
		if c.Interface != m[1] || c.Target != ecnTarget(m[1], m[2], m[3]) {
			return true, fmt.Errorf("an ECN change shows %q on %q but writes %s", c.Target, c.Interface, c.Path)
		}
	case KindMRRS:
		m := mrrsPathRE.FindStringSubmatch(c.Path)
		if m == nil || c.Target != m[1] {
			return true, fmt.Errorf("an MRRS change names %q (shown as %q), which is not a PCI function's config", c.Path, c.Target)
		}
	case KindPFC, KindTrust:
		if c.Path != "" {
			return true, fmt.Errorf("a %s change names a file (%q): it is made over rtnetlink", c.Kind, c.Path)
		}
		if !ifaceName(c.Interface) || c.Target != c.Interface {
			return true, fmt.Errorf("a %s change names %q, which is not an interface name", c.Kind, c.Interface)
		}
	default:
		return false, nil
	}
	return true, nil
}

func ecnTarget(iface, side, prio string) string {
	return fmt.Sprintf("%s %s priority %s", iface, side, prio)
}

// DCB reads and sets a NIC's DCB configuration (dcb.Client over
// rtnetlink on the live host; tests fake it).
type DCB interface {
	Get(iface string) (*dcb.IEEE, error)
	SetPFC(iface string, cur *dcb.PFC, enabled []int) error
	SetTrust(iface string, selectors []string) error
	AddApp(iface string, apps []dcb.App) error
	DelApp(iface string, apps []dcb.App) error
}

// roce plans the lossless RoCE settings of every selected NIC running
// RoCE v2: trust DSCP with DSCP 26 on the RoCE priority, PFC and ECN on
// that priority; and MRRS 4096 on RDMA NICs of 100 Gbit/s and more.
func (p *planner) roce() {
	if !p.opts.RoCE {
		return
	}
	for _, n := range p.nics {
		p.mrrs(n)
		r, ok := doctor.RoCEOf(&n.NIC, p.opts.RoCEPriority)
		if !ok {
			continue
		}
		prio, why := p.rocePriority(n, r)
		c := n.DCB
		if c == nil {
			p.note("", n.Interface, "%s runs RoCE v2, but its DCB configuration was not read (a driver without DCB, or not captured): PFC and trust left alone", n.Interface)
		} else {
			p.roceTrust(n, c, prio, why)
			p.rocePFC(n, c, prio, why)
		}
		p.roceECN(n, prio, why)
	}
}

// rocePriority is the priority tune puts RoCE on: --roce-priority, else
// the one priority PFC is already on (the switches' lossless priority),
// else 3, the priority of NVIDIA's lossless RoCE configuration.
func (p *planner) rocePriority(n *doctor.NICReport, r doctor.RoCE) (int, string) {
	if p.opts.RoCEPriority != nil {
		return *p.opts.RoCEPriority, "--roce-priority"
	}
	if c := n.DCB; c != nil && c.PFC != nil && len(c.PFC.Enabled) == 1 {
		return c.PFC.Enabled[0], fmt.Sprintf("the one priority PFC is on (%d): the fabric's lossless priority", c.PFC.Enabled[0])
	}
	if r.Trust == "dscp" {
		return r.Lands, r.LandsFrom
	}
	return doctor.RoCEDSCP >> 3, fmt.Sprintf("NVIDIA's lossless RoCE configuration: DSCP %d on priority %d (give --roce-priority to choose)", doctor.RoCEDSCP, doctor.RoCEDSCP>>3)
}

// trustValue is how a trust change journals a configuration: the trust
// ("dscp", "pcp", "none"), then DSCP 26's APP entry where the table has
// one ("dscp 26:3"), so that restoring a value restores both exactly.
func trustValue(c *dcb.IEEE) string {
	trust := "pcp"
	switch {
	case len(c.Trust) > 0:
		trust = c.Trust[0]
	case c.Trust != nil:
		trust = "none"
	case c.HasSelector("dscp"):
		trust = "dscp"
	}
	if prio, ok := c.DSCPPriority(doctor.RoCEDSCP); ok {
		return fmt.Sprintf("%s %d:%d", trust, doctor.RoCEDSCP, prio)
	}
	return trust
}

func (p *planner) roceTrust(n *doctor.NICReport, c *dcb.IEEE, prio int, why string) {
	before, after := trustValue(c), fmt.Sprintf("dscp %d:%d", doctor.RoCEDSCP, prio)
	if before == after {
		return
	}
	finding := ""
	if p.finding("roce.trust_mismatch", n.Interface) != nil {
		finding = "roce.trust_mismatch"
	}
	cmd := fmt.Sprintf("dcb app replace dev %s dscp-prio %d:%d", n.Interface, doctor.RoCEDSCP, prio)
	if c.Trust != nil {
		cmd = fmt.Sprintf("dcb apptrust set dev %s order dscp; %s", n.Interface, cmd)
	}
	p.add(Change{
		Kind: KindTrust, Target: n.Interface, Interface: n.Interface, Detail: "trust, and DSCP 26's priority",
		Before: before, After: after, Finding: finding,
		Source:  "trust the DSCP the switches mark, with RoCE's DSCP 26 on priority " + strconv.Itoa(prio) + ": " + why + " (on mlx5 the first DSCP APP entry switches the port to DSCP trust)",
		Command: cmd,
	})
}

func (p *planner) rocePFC(n *doctor.NICReport, c *dcb.IEEE, prio int, why string) {
	if c.PFC == nil {
		p.note("", n.Interface, "%s gives no PFC object over DCB: PFC left alone", n.Interface)
		return
	}
	if c.PFC.Has(prio) {
		return
	}
	after := append(slices.Clone(c.PFC.Enabled), prio)
	slices.Sort(after)
	finding := ""
	if p.finding("roce.pfc_off", n.Interface) != nil {
		finding = "roce.pfc_off"
	}
	p.add(Change{
		Kind: KindPFC, Target: n.Interface, Interface: n.Interface, Detail: "PFC priorities",
		Before: pfcValue(c.PFC.Enabled), After: pfcValue(after), Finding: finding,
		Source:  "PFC on RoCE's priority " + strconv.Itoa(prio) + " (" + why + "); the switch ports must have it too",
		Command: fmt.Sprintf("dcb pfc set dev %s prio-pfc %d:on", n.Interface, prio),
	})
}

// pfcValue journals PFC's enabled priorities: "3", "3,4", "none".
func pfcValue(ps []int) string {
	if len(ps) == 0 {
		return "none"
	}
	return cpulist.Format(ps)
}

func parsePFC(v string) ([]int, error) {
	v = strings.TrimSpace(v)
	if v == "none" {
		return []int{}, nil
	}
	ps, err := cpulist.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("PFC priorities %q: %w", v, err)
	}
	for _, p := range ps {
		if p > 7 {
			return nil, fmt.Errorf("PFC priorities %q: %d is not a priority", v, p)
		}
	}
	return ps, nil
}

func (p *planner) roceECN(n *doctor.NICReport, prio int, why string) {
	if n.ECN == nil {
		return
	}
	finding := ""
	if p.finding("roce.ecn_off", n.Interface) != nil {
		finding = "roce.ecn_off"
	}
	for _, side := range []struct {
		name string
		on   *bool
	}{{"roce_np", n.ECN.NP[prio]}, {"roce_rp", n.ECN.RP[prio]}} {
		if side.on == nil || *side.on {
			continue
		}
		path := fmt.Sprintf("/sys/class/net/%s/ecn/%s/enable/%d", n.Interface, side.name, prio)
		p.add(Change{
			Kind: KindECN, Target: ecnTarget(n.Interface, side.name, strconv.Itoa(prio)), Path: path, Interface: n.Interface,
			Before: "0", After: "1", Finding: finding,
			Source:  "ECN (DCQCN) on RoCE's priority " + strconv.Itoa(prio) + " (" + why + "); the switches must mark ECN on that queue",
			Command: "echo 1 > " + path,
		})
	}
}

// mrrs raises an RDMA NIC's Max_Read_Request_Size to 4096 at 100 Gbit/s
// and more.
func (p *planner) mrrs(n *doctor.NICReport) {
	pc := n.PCIe
	if len(n.RDMA) == 0 || pc == nil || pc.MRRS == nil || *pc.MRRS >= mrrsWant || p.finding("pcie.mrrs_small", n.Interface) == nil {
		return
	}
	path := "/sys/bus/pci/devices/" + n.PCI + "/config"
	p.add(Change{
		Kind: KindMRRS, Target: n.PCI, Path: path, Interface: n.Interface, Detail: "PCIe Max_Read_Request_Size (bytes)",
		Before: strconv.Itoa(*pc.MRRS), After: strconv.Itoa(mrrsWant), Finding: "pcie.mrrs_small",
		Source:  "NVIDIA's recommendation for RDMA NICs of 100 Gbit/s and more; the kernel or firmware may set it again at a reset or a driver reload",
		Command: fmt.Sprintf("setpci -s %s CAP_EXP+08.w=5000:7000", n.PCI),
	})
}

// mrrsOp reads and writes the MRRS field of a function's Device Control
// register in its sysfs config, leaving every other bit as it is.
type mrrsOp struct {
	fs  *hostfs.FS
	rel string
}

func (m mrrsOp) devCtl() (int, uint16, error) {
	b, err := m.fs.ReadFile(m.rel)
	if err != nil {
		return 0, 0, err
	}
	off, err := hostfs.DevCtlOffset(b)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w (reading config space beyond 64 bytes needs root)", m.fs.Display(m.rel), err)
	}
	return off, binary.LittleEndian.Uint16(b[off:]), nil
}

func (m mrrsOp) read() (string, error) {
	_, ctl, err := m.devCtl()
	if err != nil {
		return "", err
	}
	return strconv.Itoa(hostfs.MRRSOf(ctl)), nil
}

func (m mrrsOp) write(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("MRRS %q is not a number", v)
	}
	off, ctl, err := m.devCtl()
	if err != nil {
		return err
	}
	ctl, err = hostfs.WithMRRS(ctl, n)
	if err != nil {
		return err
	}
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], ctl)
	return m.fs.WriteAt(m.rel, int64(off), b[:])
}

func (m mrrsOp) same(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }

func (m mrrsOp) check(string) error { return nil }

// pfcOp sets PFC's enabled priorities over rtnetlink.
type pfcOp struct {
	d     DCB
	iface string
}

func (o pfcOp) read() (string, error) {
	c, err := o.d.Get(o.iface)
	if err != nil {
		return "", err
	}
	if c.PFC == nil {
		return "", fmt.Errorf("%s: the driver gives no PFC object", o.iface)
	}
	return pfcValue(c.PFC.Enabled), nil
}

func (o pfcOp) write(v string) error {
	ps, err := parsePFC(v)
	if err != nil {
		return err
	}
	c, err := o.d.Get(o.iface)
	if err != nil {
		return err
	}
	return o.d.SetPFC(o.iface, c.PFC, ps)
}

func (o pfcOp) same(a, b string) bool {
	x, err1 := parsePFC(a)
	y, err2 := parsePFC(b)
	return err1 == nil && err2 == nil && slices.Equal(x, y)
}

func (o pfcOp) check(string) error { return nil }

// trustOp sets the trust and DSCP 26's priority over rtnetlink: with the
// driver's trust table where it has one (dcb apptrust), else as mlx5
// wants it, through the APP table (the first DSCP entry turns DSCP trust
// on; removing the last turns it off).
type trustOp struct {
	d     DCB
	iface string
}

func (o trustOp) read() (string, error) {
	c, err := o.d.Get(o.iface)
	if err != nil {
		return "", err
	}
	return trustValue(c), nil
}

func (o trustOp) write(v string) error {
	f := strings.Fields(v)
	var want dcb.App
	if len(f) == 0 || len(f) > 2 || (len(f) == 2 && !parseDSCPPrio(f[1], &want)) {
		return fmt.Errorf("trust %q: want a selector, then DSCP:PRIORITY where DSCP 26 has an entry", v)
	}
	c, err := o.d.Get(o.iface)
	if err != nil {
		return err
	}
	if c.Trust == nil && f[0] == "pcp" {
		// mlx5 trusts PCP once the APP table holds no DSCP entry.
		if len(f) == 2 {
			return fmt.Errorf("trust %q: without a trust table, any DSCP entry means DSCP trust", v)
		}
		var dscp []dcb.App
		for _, a := range c.App {
			if a.Selector == "dscp" {
				dscp = append(dscp, a)
			}
		}
		if len(dscp) == 0 {
			return nil
		}
		return o.d.DelApp(o.iface, dscp)
	}
	if c.Trust == nil && f[0] != "dscp" {
		return fmt.Errorf("trust %q: this driver has no trust table, only DSCP (APP entries) or PCP (none)", v)
	}
	if c.Trust != nil && (len(c.Trust) == 0 || c.Trust[0] != f[0]) {
		if err := o.d.SetTrust(o.iface, f[:1]); err != nil {
			return err
		}
	}
	cur, has := c.DSCPPriority(doctor.RoCEDSCP)
	switch {
	case has && (len(f) == 1 || cur != want.Priority):
		if err := o.d.DelApp(o.iface, []dcb.App{{Selector: "dscp", Protocol: doctor.RoCEDSCP, Priority: cur}}); err != nil {
			return err
		}
	case has:
		return nil
	}
	if len(f) == 1 {
		return nil
	}
	if want.Protocol != doctor.RoCEDSCP {
		return fmt.Errorf("trust %q: only DSCP %d's entry is tune's", v, doctor.RoCEDSCP)
	}
	return o.d.AddApp(o.iface, []dcb.App{want})
}

// parseDSCPPrio reads "26:3".
func parseDSCPPrio(s string, a *dcb.App) bool {
	d, p, ok := strings.Cut(s, ":")
	dv, err1 := strconv.Atoi(d)
	pv, err2 := strconv.Atoi(p)
	if !ok || err1 != nil || err2 != nil || dv < 0 || dv > 63 || pv < 0 || pv > 7 {
		return false
	}
	*a = dcb.App{Selector: "dscp", Protocol: dv, Priority: pv}
	return true
}

func (o trustOp) same(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

func (o trustOp) check(string) error { return nil }

// roceFindings are the findings tune --roce answers.
var roceFindings = []string{"roce.pfc_off", "roce.ecn_off", "roce.trust_mismatch", "pcie.mrrs_small"}

// roceTitle heads a group of RoCE changes in the human view.
func roceTitle(k Kind) string {
	switch k {
	case KindMRRS:
		return "PCIe max read request size (config space, as setpci writes it)"
	case KindTrust:
		return "DCB trust and DSCP 26's priority (rtnetlink)"
	case KindPFC:
		return "DCB PFC (rtnetlink)"
	}
	return "ECN per priority (sysfs)"
}
