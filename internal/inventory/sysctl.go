package inventory

import (
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
)

// sysctlKind says how a sysctl's value reads: one integer, an integer
// triple (min default max), or a word.
type sysctlKind int

const (
	sysInt sysctlKind = iota
	sysTriple
	sysWord
)

// netSysctls are the settings that bound TCP throughput and latency on a
// fast link (fasterdata's 100G page, tuned's network-throughput).
var netSysctls = []struct {
	key  string
	kind sysctlKind
}{
	{"net.core.rmem_max", sysInt},
	{"net.core.wmem_max", sysInt},
	{"net.core.rmem_default", sysInt},
	{"net.core.wmem_default", sysInt},
	{"net.core.optmem_max", sysInt},
	{"net.core.netdev_max_backlog", sysInt},
	{"net.core.netdev_budget", sysInt},
	{"net.core.default_qdisc", sysWord},
	{"net.ipv4.tcp_rmem", sysTriple},
	{"net.ipv4.tcp_wmem", sysTriple},
	{"net.ipv4.tcp_congestion_control", sysWord},
	{"net.ipv4.tcp_mtu_probing", sysInt},
	{"net.ipv4.tcp_timestamps", sysInt},
	{"net.ipv4.tcp_sack", sysInt},
	{"net.ipv4.tcp_window_scaling", sysInt},
	{"net.ipv4.tcp_no_metrics_save", sysInt},
	{"net.ipv4.tcp_slow_start_after_idle", sysInt},
	{"net.ipv4.tcp_adv_win_scale", sysInt},
	{"net.ipv4.tcp_notsent_lowat", sysInt},
}

// SysctlPath returns the procfs path of a dotted sysctl name.
func SysctlPath(key string) string {
	return "proc/sys/" + strings.ReplaceAll(key, ".", "/")
}

// sysctls reads netSysctls. Some are global and absent inside a network
// namespace (net.core.netdev_max_backlog, default_qdisc); those are left
// out, with a note.
func (c *collector) sysctls() map[string]any {
	out := map[string]any{}
	var missing []string
	for _, s := range netSysctls {
		v, err := c.fs.ReadString(SysctlPath(s.key))
		if err != nil {
			if hostfs.IsNotExist(err) {
				missing = append(missing, s.key)
			} else {
				c.noteErr(s.key, err)
			}
			continue
		}
		if parsed, ok := parseSysctl(v, s.kind); ok {
			out[s.key] = parsed
		} else {
			c.note("%s: unexpected value %q", s.key, v)
		}
	}
	if len(missing) > 0 {
		c.note("sysctls not present here (global settings outside a network namespace, or an older kernel): %s", strings.Join(missing, ", "))
	}
	return out
}

func parseSysctl(v string, kind sysctlKind) (any, bool) {
	switch kind {
	case sysInt:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	case sysTriple:
		f := strings.Fields(v)
		if len(f) != 3 {
			return nil, false
		}
		t := make([]int64, 3)
		for i, s := range f {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, false
			}
			t[i] = n
		}
		return t, true
	}
	return v, v != ""
}

// SysctlInt returns an integer sysctl, or the max of a triple.
func (inv *Inventory) SysctlInt(key string) (int64, bool) {
	switch v := inv.Sysctl[key].(type) {
	case int64:
		return v, true
	case []int64:
		if len(v) == 3 {
			return v[2], true
		}
	case float64: // decoded from JSON
		return int64(v), true
	case []any:
		if len(v) == 3 {
			if f, ok := v[2].(float64); ok {
				return int64(f), true
			}
		}
	}
	return 0, false
}
