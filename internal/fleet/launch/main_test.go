package launch

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperArg makes this test binary act as another program when it is the
// first argument: an agent stand-in that a launcher starts on a host, or
// the controller of a Slurm allocation (run by salloc). The binary stands
// in for linerate: it is what the ssh launcher copies to each host.
const helperArg = "launch-helper"

// update rewrites the captures in testdata from the live lab cluster.
var update = flag.Bool("update", false, "rewrite testdata captures from the live lab")

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		os.Exit(helper(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) int {
	switch mode {
	case "agent":
		// agent --token-file F: say where it runs and what token it was
		// given, then wait for SIGTERM.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		if len(args) != 2 || args[0] != "--token-file" {
			fmt.Fprintln(os.Stderr, "usage: agent --token-file F")
			return 2
		}
		tok, err := os.ReadFile(args[1])
		st, serr := os.Stat(args[1])
		if err != nil || serr != nil {
			fmt.Fprintln(os.Stderr, "token file:", err, serr)
			return 2
		}
		host, _ := os.Hostname()
		fmt.Printf("ready host=%s token=%s mode=%o pid=%d\n", host, strings.TrimSpace(string(tok)), st.Mode().Perm(), os.Getpid())
		<-sigs
		fmt.Println("got SIGTERM")
		return 143
	case "slurm-controller":
		return slurmController()
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 3
}

// controllerReport is what the Slurm controller helper prints.
type controllerReport struct {
	Nodes  []Node            `json:"nodes"`
	Ready  map[string]string `json:"ready"`
	PIDs   map[string]int    `json:"pids"`
	Exits  map[string]int    `json:"exits"`
	Stdout map[string]string `json:"stdout"`
	Error  string            `json:"error,omitempty"`
}

// slurmController runs inside `salloc -N K`: it reads the allocation, starts
// the agent helper on every node with srun, waits until each says where it
// runs, stops them all, and prints what happened as JSON.
func slurmController() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep := controllerReport{Ready: map[string]string{}, PIDs: map[string]int{}, Exits: map[string]int{}, Stdout: map[string]string{}}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	l := &Slurm{Dir: os.Getenv("LAUNCH_TEST_DIR")}
	nodes, err := l.Nodes(ctx)
	if err != nil {
		rep.Error = err.Error()
		return 1
	}
	rep.Nodes = nodes
	var procs []*Process
	defer func() {
		for _, p := range procs {
			ex := p.Stop(context.Background())
			rep.Exits[p.Host] = ex.Code
			rep.Stdout[p.Host] = strings.Join(p.Stdout(), "\n")
		}
	}()
	for _, n := range nodes {
		p, err := l.Start(ctx, n.Name, []string{os.Args[0], helperArg, "agent", "--token-file", TokenFile}, []byte("token-for-"+n.Name))
		if err != nil {
			rep.Error = err.Error()
			return 1
		}
		procs = append(procs, p)
		rep.PIDs[n.Name] = p.PID
	}
	for _, p := range procs {
		line, err := p.WaitLine(ctx, "ready ")
		if err != nil {
			rep.Error = err.Error()
			return 1
		}
		rep.Ready[p.Host] = line
	}
	return 0
}
