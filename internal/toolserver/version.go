package toolserver

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// iperf3Fixes are the iperf3 releases that fixed server bugs a client
// reaches before authenticating: iperf3 reads and parses the client's
// parameters first.
var iperf3Fixes = []struct {
	minor int // 3.minor
	cve   string
	what  string
}{
	{14, "CVE-2023-38403", "heap corruption from the parameters' length"},
	{16, "CVE-2023-7250", "a server hang"},
	{18, "CVE-2024-53580", "a crash in the parameter exchange"},
}

var iperf3Version = regexp.MustCompile(`^iperf (\d+)\.(\d+)`)

// Iperf3Advisory runs `iperf3 --version` and returns a warning when it is
// older than a release that fixed server bugs reachable before
// authentication; "" when it is not, or iperf3 is not installed. It warns
// and does not refuse: distributions backport such fixes without changing
// the version (Debian 12 ships 3.12).
func Iperf3Advisory() string {
	if _, err := exec.LookPath("iperf3"); err != nil {
		return ""
	}
	out, _ := exec.Command("iperf3", "--version").Output()
	return iperf3Advisory(string(out))
}

func iperf3Advisory(version string) string {
	m := iperf3Version.FindStringSubmatch(strings.TrimSpace(version))
	if m == nil {
		return ""
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != 3 {
		return ""
	}
	var missing []string
	for _, f := range iperf3Fixes {
		if minor < f.minor {
			missing = append(missing, fmt.Sprintf("%s (%s, fixed in 3.%d)", f.cve, f.what, f.minor))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("iperf3 %d.%d is older than the releases that fixed %s; its server parses a client's parameters before checking credentials, and anyone who reaches its port while a test runs is such a client: install iperf3 3.18 or later, or check that your distribution backported the fixes",
		major, minor, strings.Join(missing, ", "))
}
