package lab

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes the test binary act as another program when a test runs
// it as a subprocess: an `up` that pauses half-way (to be killed or
// interrupted), or a stand-in for `linerate doctor` inside a lab host.
const helperEnv = "LINERATE_LAB_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) int {
	switch mode {
	case "up-pause":
		// up NAME STEP [HOSTS]: bring lab NAME up (of HOSTS hosts),
		// pausing for good after the change that starts with STEP;
		// SIGINT/SIGTERM cancel the up.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var hosts int
		if len(args) > 2 {
			fmt.Sscan(args[2], &hosts)
		}
		c := Config{Name: args[0], Hosts: hosts, afterStep: func(desc string) {
			if strings.HasPrefix(desc, args[1]) {
				fmt.Println("paused")
				<-ctx.Done()
			}
		}}
		if _, err := Up(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case "doctor":
		// Stands in for linerate: `tune` shows its arguments and state
		// directory; `doctor` shows what it sees of the host, then reports
		// findings when given --peer and fails without.
		if len(args) > 0 && args[0] == "bench" && slices.Contains(args, "--json") {
			// The demo's probe: what a healthy lab of a 2-CPU VM carried.
			fmt.Println(`{"schema": "linerate.bench/v1", "end": {"sum_received": {"bits_per_second": 26.6e9}}}`)
			return 0
		}
		if len(args) > 0 && (args[0] == "tune" || args[0] == "bench" || args[0] == "report") {
			fmt.Printf("args %s\nstate %s\n", strings.Join(args, " "), os.Getenv("LINERATE_STATE_DIR"))
			return 0
		}
		b, err := os.ReadFile("/sys/class/net/" + Iface + "/mtu")
		fmt.Printf("args %s\nmtu %s", strings.Join(args, " "), b)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		for _, a := range args {
			if a == "--peer" {
				return 1
			}
		}
		fmt.Fprintln(os.Stderr, `linerate: unknown command "doctor" for "linerate"`)
		return 2
	case "doctor-hang":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("started")
		<-sigs
		return 143
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 3
}
