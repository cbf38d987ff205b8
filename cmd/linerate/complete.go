package main

import (
	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/lab"
)

// flagValues are the values shell completion offers for enumerated flags,
// by command path and flag name ("" for every command with that flag).
// Completion offered nothing for them, so shells fell back to file names.
func flagValues() map[[2]string][]string {
	var scenarios []string
	for _, s := range lab.Scenarios() {
		scenarios = append(scenarios, string(s))
	}
	return map[[2]string][]string{
		{"linerate bench", "engine"}:        bench.DriverNames(),
		{"linerate lab up", "scenario"}:     scenarios,
		{"linerate lab run", "scenario"}:    scenarios,
		{"linerate doctor", "fail-on"}:      {"critical", "warning", "info"},
		{"linerate tune", "profile"}:        {"throughput", "latency"},
		{"", "color"}:                       {"auto", "always", "never"},
		{"linerate bench", "perftest-test"}: {"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat"},
		{"linerate fleet run", "pattern"}:   {"pairs", "ring", "star:", "incast:"},
	}
}

// registerCompletions attaches flagValues to the command tree.
func registerCompletions(root *cobra.Command) {
	vals := flagValues()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for key, v := range vals {
			if key[0] != c.CommandPath() && key[0] != "" {
				continue
			}
			fs := c.Flags()
			if key[0] == "" {
				fs = c.PersistentFlags()
			}
			if fs.Lookup(key[1]) == nil {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(key[1], cobra.FixedCompletions(v, cobra.ShellCompDirectiveNoFileComp))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
