package tune

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// What each kind of change may touch. Revert writes a journal's prior
// values as root, so a journal is trusted only if every step names a
// path of its kind — as tune writes it, relative to the journal's root —
// and the target it shows matches that path: a journal naming
// /etc/passwd, or /proc/sys/net/../../etc/passwd, is refused on load.
var (
	// sysctlPathRE: the net sysctls (inventory.SysctlPath of a key
	// net.*: dots become slashes, so no component holds a dot).
	sysctlPathRE = regexp.MustCompile(`^/proc/sys/net(/[A-Za-z0-9_-]+)+$`)
	// governorPathRE: a CPU's cpufreq governor.
	governorPathRE = regexp.MustCompile(`^/sys/devices/system/cpu/cpu[0-9]{1,5}/cpufreq/scaling_governor$`)
	// irqPathRE: an IRQ's affinity list.
	irqPathRE = regexp.MustCompile(`^/proc/irq/([0-9]{1,7})/smp_affinity_list$`)
)

// checkChange verifies that a journaled change touches only what its kind
// may, and names it as tune does.
func checkChange(c *Change) error {
	if ok, err := checkRoCEChange(c); ok {
		return err
	}
	switch c.Kind {
	case KindSysctl:
		if !sysctlPathRE.MatchString(c.Path) {
			return fmt.Errorf("a sysctl change names %q, which is not a net sysctl (/proc/sys/net/…)", c.Path)
		}
		if key := strings.ReplaceAll(strings.TrimPrefix(c.Path, "/proc/sys/"), "/", "."); c.Target != key {
			return fmt.Errorf("a sysctl change shows %q but writes %s", c.Target, c.Path)
		}
	case KindGovernor:
		// Its target ("cpu7") is shown as written: any CPU's governor is a
		// governor.
		if !governorPathRE.MatchString(c.Path) {
			return fmt.Errorf("a governor change names %q, which is not a cpufreq scaling_governor", c.Path)
		}
	case KindIRQ:
		m := irqPathRE.FindStringSubmatch(c.Path)
		if m == nil {
			return fmt.Errorf("an IRQ change names %q, which is not an IRQ's smp_affinity_list", c.Path)
		}
		if irq, _ := strconv.Atoi(m[1]); c.Target != fmt.Sprintf("irq %d", irq) {
			return fmt.Errorf("an IRQ change shows %q but writes %s", c.Target, c.Path)
		}
	case KindIRQBalance:
		ok := false
		for _, rel := range irqbalanceFiles() {
			ok = ok || c.Path == "/"+rel
		}
		if !ok || c.Target != c.Path {
			return fmt.Errorf("an irqbalance change names %q, which is not irqbalance's configuration (/etc/default/irqbalance or /etc/sysconfig/irqbalance)", c.Path)
		}
	case KindMTU, KindChannels, KindRings:
		if c.Path != "" {
			return fmt.Errorf("a %s change names a file (%q): it is made over netlink or ethtool", c.Kind, c.Path)
		}
		if !ifaceName(c.Interface) || c.Target != c.Interface {
			return fmt.Errorf("a %s change names %q, which is not an interface name", c.Kind, c.Interface)
		}
	default:
		return fmt.Errorf("unknown kind of change %q (a journal from a newer linerate?)", c.Kind)
	}
	return nil
}

// ifaceName reports whether s is a name the kernel accepts for a network
// interface (dev_valid_name): 1 to 15 bytes, not "." or "..", without
// '/', ':' or white space.
func ifaceName(s string) bool {
	if s == "" || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsAny(s, "/: \t\n\r\v\f")
}

// checkRoot verifies a journal's root: "/" (the live host) or the
// absolute, clean path of a captured tree.
func checkRoot(root string) error {
	if root == "" || !path.IsAbs(root) || path.Clean(root) != root {
		return fmt.Errorf("its root %q is not an absolute directory; a journal tune wrote never does that: check who wrote it, then remove it", root)
	}
	return nil
}
