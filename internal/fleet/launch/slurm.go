package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Slurm starts commands on the nodes of the Slurm allocation it runs in
// (salloc -N K, or sbatch -N K), one srun step per node. It reads the
// allocation from the environment Slurm gives the job. The command's path
// must be valid on every node (a shared file system, or a copy made with
// sbcast first).
type Slurm struct {
	// Srun and Scontrol are the commands; "" means srun and scontrol
	// from PATH.
	Srun, Scontrol string
	// Env is the allocation's environment (SLURM_JOB_ID,
	// SLURM_JOB_NODELIST, …); nil means this process's.
	Env []string
	// Dir is the directory for token files on the nodes; "" means
	// /tmp/linerate-job<JOBID>-<random>: a name nobody can make first in
	// a shared /tmp. It is made private (mode 700) to its user.
	Dir string
	// StartCmd starts a local command; nil means exec.Cmd.Start.
	StartCmd func(*exec.Cmd) error

	once sync.Once
	made string // the default Dir, once chosen
	err  error
}

// dir is Dir, or the default chosen once for this job.
func (s *Slurm) dir(id string) (string, error) {
	if s.Dir != "" {
		return s.Dir, nil
	}
	s.once.Do(func() {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			s.err = fmt.Errorf("naming the token directory: %w", err)
			return
		}
		s.made = "/tmp/linerate-job" + id + "-" + hex.EncodeToString(b[:])
	})
	return s.made, s.err
}

// Node is one node of the allocation.
type Node struct {
	Name string `json:"name"`
	// Addr is the node's NodeAddr: an address or a name to resolve (by
	// default Slurm's NodeAddr is the node's name).
	Addr string `json:"addr"`
	// Hostname is its NodeHostName.
	Hostname string `json:"hostname,omitempty"`
}

func (s *Slurm) env() []string {
	if s.Env == nil {
		return os.Environ()
	}
	return s.Env
}

func (s *Slurm) getenv(key string) string {
	env := s.env()
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// Job returns the allocation's job ID and node list, or an error saying
// how to get an allocation.
func (s *Slurm) Job() (id, nodelist string, err error) {
	id, nodelist = s.getenv("SLURM_JOB_ID"), s.getenv("SLURM_JOB_NODELIST")
	if nodelist == "" {
		nodelist = s.getenv("SLURM_NODELIST")
	}
	if id == "" || nodelist == "" {
		return "", "", fmt.Errorf("not inside a Slurm allocation (no SLURM_JOB_ID and SLURM_JOB_NODELIST): run under 'salloc -N K' or 'sbatch -N K'")
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return "", "", fmt.Errorf("SLURM_JOB_ID %q is not a job number", id)
		}
	}
	return id, nodelist, nil
}

func (s *Slurm) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = s.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := s.StartCmd
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("starting %s: %w (is Slurm's client installed?)", name, err)
	}
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Nodes lists the allocation's nodes in Slurm's order, each with the
// address Slurm reaches it at: `scontrol show hostnames` expands the node
// list, `scontrol show node -o` gives each node's NodeAddr.
func (s *Slurm) Nodes(ctx context.Context) ([]Node, error) {
	_, list, err := s.Job()
	if err != nil {
		return nil, err
	}
	scontrol := orDefault(s.Scontrol, "scontrol")
	out, err := s.run(ctx, scontrol, "show", "hostnames", list)
	if err != nil {
		return nil, err
	}
	names := strings.Fields(out)
	if len(names) == 0 {
		return nil, fmt.Errorf("scontrol show hostnames %s: no node", list)
	}
	out, err = s.run(ctx, scontrol, "show", "node", "-o", list)
	if err != nil {
		return nil, err
	}
	byName, err := ParseNodes(out)
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(names))
	for _, n := range names {
		nd, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("scontrol show node %s: no record of node %s", list, n)
		}
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

// ParseNodes reads `scontrol show node -o`: one node per line of
// Key=Value fields. Values with blanks (OS=Linux 6.1.0 #1 SMP …) are
// harmless: only NodeName, NodeAddr and NodeHostName are read, and a
// blank-separated word is only a field when it has a key of letters.
func ParseNodes(out string) (map[string]Node, error) {
	nodes := map[string]Node{}
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var n Node
		for _, w := range strings.Fields(line) {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			switch k {
			case "NodeName":
				n.Name = v
			case "NodeAddr":
				n.Addr = v
			case "NodeHostName":
				n.Hostname = v
			}
		}
		if n.Name == "" || !printable(n.Name) || !printable(n.Addr) {
			return nil, fmt.Errorf("scontrol show node, line %d: no NodeName: %.80q", i+1, line)
		}
		if n.Addr == "" || n.Addr == "(null)" {
			n.Addr = n.Name
		}
		nodes[n.Name] = n
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("scontrol show node printed no node")
	}
	return nodes, nil
}

func printable(s string) bool {
	for _, c := range s {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return len(s) <= 255
}

// Start starts argv as one task of a job step on node, in the background,
// with token in a new file (mode 600, under Dir) whose path replaces
// TokenFile in argv, and returns once it runs. The step may share the
// node with other steps (--overlap) and is not bound to CPUs
// (--cpu-bind=none): an agent picks its own CPUs.
func (s *Slurm) Start(ctx context.Context, node string, argv []string, token []byte) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: no command to start", node)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	if node == "" || strings.HasPrefix(node, "-") || !printable(node) {
		return nil, fmt.Errorf("node name %q", node)
	}
	id, _, err := s.Job()
	if err != nil {
		return nil, err
	}
	dir, err := s.dir(id)
	if err != nil {
		return nil, err
	}
	tok, err := tokenPath(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"--jobid=" + id, "--nodes=1", "--ntasks=1", "--nodelist=" + node, "--overlap",
		"--cpu-bind=none", "--kill-on-bad-exit=0", "--job-name=linerate-agent", "--quiet",
		"--", "sh", "-c", wrapper, "linerate-launch", dir, tok}
	cmd := exec.Command(orDefault(s.Srun, "srun"), append(args, withToken(argv, tok)...)...)
	cmd.Env = s.env()
	return start(ctx, node, cmd, s.StartCmd, token)
}
