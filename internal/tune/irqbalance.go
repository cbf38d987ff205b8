package tune

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// argsRE matches an IRQBALANCE_ARGS assignment, as systemd's
// EnvironmentFile= (and a shell) reads it.
var argsRE = regexp.MustCompile(`^\s*(?:export\s+)?IRQBALANCE_ARGS=(.*?)\s*$`)

// banIRQs returns conf with --banirq=N for each IRQ in its IRQBALANCE_ARGS,
// keeping the other arguments. Bans already there are not repeated, so
// banning twice changes nothing.
func banIRQs(conf string, irqs []int) string {
	args := strings.Fields(argsValue(conf))
	for _, q := range irqs {
		if ban := fmt.Sprintf("--banirq=%d", q); !slices.Contains(args, ban) {
			args = append(args, ban)
		}
	}
	return withArgsLine(conf, `IRQBALANCE_ARGS="`+strings.Join(args, " ")+`"`)
}

// withArgsLine returns conf with its last IRQBALANCE_ARGS assignment
// replaced by line, or line added at the end (with a comment saying who
// added it) when there is none. Every other byte is kept.
func withArgsLine(conf, line string) string {
	lines := strings.SplitAfter(conf, "\n")
	at := -1
	for i, l := range lines {
		if argsRE.MatchString(strings.TrimSuffix(l, "\n")) {
			at = i
		}
	}
	if at >= 0 {
		nl := ""
		if strings.HasSuffix(lines[at], "\n") {
			nl = "\n"
		}
		lines[at] = line + nl
		return strings.Join(lines, "")
	}
	if conf != "" && !strings.HasSuffix(conf, "\n") {
		conf += "\n"
	}
	return conf + "# IRQs pinned by linerate tune (undo: linerate tune revert)\n" + line + "\n"
}

// argsValue returns the value of conf's last IRQBALANCE_ARGS assignment,
// unquoted ("" when there is none).
func argsValue(conf string) string {
	v := ""
	for l := range strings.SplitSeq(conf, "\n") {
		if m := argsRE.FindStringSubmatch(l); m != nil {
			v = unquote(m[1])
		}
	}
	return v
}

// argsLine shows conf's IRQBALANCE_ARGS, for a plan.
func argsLine(conf string) string {
	for l := range strings.SplitSeq(conf, "\n") {
		if argsRE.MatchString(l) {
			return `IRQBALANCE_ARGS="` + argsValue(conf) + `"`
		}
	}
	return "IRQBALANCE_ARGS unset"
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}
