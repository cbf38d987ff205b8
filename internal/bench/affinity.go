package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
)

// ParseAffinity reads -A: "C,S" (iperf3's form: one CPU or range per
// end, "0,1" or "0-3,4-7"), "C/S" (CPU lists with commas: "0,2/1,3"), or
// "C" (the client's only). An empty side is nil: the engine chooses.
func ParseAffinity(s string) (client, server []int, err error) {
	var c, sv string
	switch {
	case strings.Contains(s, "/"):
		c, sv, _ = strings.Cut(s, "/")
	case strings.Count(s, ",") == 1:
		c, sv, _ = strings.Cut(s, ",")
	case strings.Count(s, ",") > 1:
		return nil, nil, fmt.Errorf("-A %q: ambiguous: write CLIENT/SERVER when a side lists several CPUs, e.g. 0,2/1,3", s)
	default:
		c = s
	}
	if client, err = optionalList(c); err != nil {
		return nil, nil, fmt.Errorf("-A client CPUs: %w", err)
	}
	if server, err = optionalList(sv); err != nil {
		return nil, nil, fmt.Errorf("-A server CPUs: %w", err)
	}
	return client, server, nil
}

func optionalList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return cpulist.Parse(s)
}

// FormatAffinity writes CPU lists back in the "C/S" form ParseAffinity
// reads.
func FormatAffinity(client, server []int) string {
	f := func(c []int) string {
		if c == nil {
			return ""
		}
		return cpulist.Format(sortedCopy(c))
	}
	return f(client) + "/" + f(server)
}

func sortedCopy(a []int) []int {
	b := slices.Clone(a)
	slices.Sort(b)
	return b
}
