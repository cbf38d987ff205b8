package fleet

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
)

// Host is one member of a fleet.
type Host struct {
	// Name is how the fleet's output names the host: unique, short.
	Name string `json:"name"`
	// Address is where its agent listens for tests: an IP address or a
	// DNS name.
	Address string `json:"address"`
	// SSH, when set, is the destination the system ssh client reaches the
	// host by to start its agent ("root@node17", or a Host alias of
	// ~/.ssh/config); empty means the address.
	SSH string `json:"ssh,omitempty"`
	// Iface is the interface its tests ran on, as its agent found it (""
	// when unknown): what doctor --iface needs.
	Iface string `json:"iface,omitempty"`
}

// Bounds of a host list. A line longer than maxLine is not a host line;
// maxHosts bounds the schedule (the matrix of 4096 hosts is 16.8 million
// tests, already far beyond what anyone would run).
const (
	maxLine     = 4096
	maxHosts    = 4096
	maxNameLen  = 64
	maxFieldLen = 255
)

// ParseHosts reads a host list: one host per line, NAME ADDRESS
// [SSH-TARGET] separated by blanks; '#' starts a comment; blank lines are
// skipped. An error names the file (as src) and the line, in one line.
func ParseHosts(src string, r io.Reader) ([]Host, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), maxLine+1)
	var hosts []Host
	names, addrs := map[string]int{}, map[string]int{}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if len(line) > maxLine {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", src, n, maxLine)
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		h, err := hostOf(f)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", src, n, err)
		}
		if prev, dup := names[h.Name]; dup {
			return nil, fmt.Errorf("%s:%d: host %s is already on line %d", src, n, h.Name, prev)
		}
		if prev, dup := addrs[strings.ToLower(h.Address)]; dup {
			return nil, fmt.Errorf("%s:%d: address %s is already on line %d", src, n, h.Address, prev)
		}
		if len(hosts) == maxHosts {
			return nil, fmt.Errorf("%s:%d: more than %d hosts", src, n, maxHosts)
		}
		names[h.Name], addrs[strings.ToLower(h.Address)] = n, n
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", src, n+1, maxLine)
		}
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	if len(hosts) < 2 {
		return nil, fmt.Errorf("%s: %s: a fleet needs at least 2 (one line each: NAME ADDRESS [SSH-TARGET])", src, count(len(hosts), "host"))
	}
	return hosts, nil
}

// hostOf makes a host of a line's fields.
func hostOf(f []string) (Host, error) {
	if len(f) < 2 || len(f) > 3 {
		return Host{}, fmt.Errorf("%d fields: want NAME ADDRESS [SSH-TARGET]", len(f))
	}
	h := Host{Name: f[0], Address: f[1]}
	if len(f) == 3 {
		h.SSH = f[2]
	}
	return h, h.Validate()
}

// Validate checks a host's fields: what the fleet's output, the agent's
// address and an ssh command line can safely carry.
func (h Host) Validate() error {
	if err := checkName(h.Name); err != nil {
		return err
	}
	if err := checkAddress(h.Address); err != nil {
		return err
	}
	if h.Iface != "" {
		if err := checkIface(h.Iface); err != nil {
			return err
		}
	}
	if h.SSH != "" {
		return checkSSH(h.SSH)
	}
	return nil
}

// checkIface accepts what Linux takes as an interface name (at most 15
// bytes, no '/', no blank) and what a command line can carry unquoted.
func checkIface(s string) error {
	if len(s) > 15 {
		return fmt.Errorf("interface %q: longer than 15 bytes", s)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '@' || c == ':') {
			return fmt.Errorf("interface %q: not an interface name", s)
		}
	}
	return nil
}

func checkName(s string) error {
	if s == "" || len(s) > maxNameLen {
		return fmt.Errorf("host name %q: 1 to %d characters", s, maxNameLen)
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '.' || c == '_')
		if !ok {
			return fmt.Errorf("host name %q: use letters, digits and '-', '.', '_', starting with a letter or digit", s)
		}
	}
	return nil
}

// checkAddress accepts an IP address or a DNS name (RFC 1123 labels).
func checkAddress(s string) error {
	if net.ParseIP(s) != nil {
		return nil
	}
	if s == "" || len(s) > 253 {
		return fmt.Errorf("address %q: not an IP address or a DNS name", s)
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	// A name's last label is never all digits (RFC 1123 2.1, RFC 3696
	// 2): "198.18.0.300" is a mistyped IPv4 address, not a name to look
	// up.
	if last := labels[len(labels)-1]; last != "" && strings.Trim(last, "0123456789") == "" {
		return fmt.Errorf("address %q: not a valid IP address (each part of an IPv4 address is 0 to 255) nor a DNS name", s)
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("address %q: not an IP address or a DNS name", s)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("address %q: not an IP address or a DNS name", s)
			}
		}
	}
	return nil
}

// checkSSH refuses what ssh would read as an option (a leading '-') and
// anything but printable ASCII: the target goes on ssh's command line.
func checkSSH(s string) error {
	if len(s) > maxFieldLen {
		return fmt.Errorf("ssh target %q: longer than %d characters", s, maxFieldLen)
	}
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("ssh target %q starts with '-' (ssh would read it as an option)", s)
	}
	for _, c := range s {
		if c <= ' ' || c > '~' || c == '\'' || c == '"' || c == '\\' || c == '`' || c == '$' || c == ';' || c == '|' || c == '&' {
			return fmt.Errorf("ssh target %q: use user@host, host, ssh://user@host:port or a Host alias of your ssh config", s)
		}
	}
	return nil
}
