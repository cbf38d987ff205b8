package launch

import (
	"os"
	"strings"
	"testing"
)

// TestParseNodes reads the capture of a real cluster's `scontrol show node
// -o`, whose OS field holds blanks and '#'.
func TestParseNodes(t *testing.T) {
	b, err := os.ReadFile("testdata/scontrol-show-node.txt")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := ParseNodes(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("%d nodes: %+v", len(nodes), nodes)
	}
	for _, want := range []Node{
		{"h01", "198.18.0.1", "lr-t-slurm-h01"}, {"h04", "198.18.0.4", "lr-t-slurm-h04"},
	} {
		if nodes[want.Name] != want {
			t.Errorf("%s: %+v, want %+v", want.Name, nodes[want.Name], want)
		}
	}
	// A node without NodeAddr is reached by its name, as Slurm does.
	n, err := ParseNodes("NodeName=gpu17 Arch=x86_64 NodeAddr=(null) State=IDLE\n")
	if err != nil || n["gpu17"].Addr != "gpu17" {
		t.Errorf("no NodeAddr: %+v, %v", n, err)
	}
	for _, bad := range []string{"", "\n\n", "Arch=x86_64 State=IDLE", "NodeName=a\x01b NodeAddr=1.2.3.4"} {
		if _, err := ParseNodes(bad); err == nil {
			t.Errorf("ParseNodes(%q) accepted", bad)
		}
	}
}

// TestSlurmJob: outside an allocation the launcher says how to get one.
func TestSlurmJob(t *testing.T) {
	s := &Slurm{Env: []string{"PATH=/usr/bin"}}
	if _, _, err := s.Job(); err == nil || !strings.Contains(err.Error(), "salloc -N K") {
		t.Errorf("no allocation: %v", err)
	}
	s.Env = []string{"SLURM_JOB_ID=12;rm", "SLURM_JOB_NODELIST=n[1-4]"}
	if _, _, err := s.Job(); err == nil {
		t.Error("a job ID with a shell metacharacter was accepted")
	}
	s.Env = []string{"SLURM_JOB_ID=42", "SLURM_NODELIST=n[1-4]"}
	if id, list, err := s.Job(); err != nil || id != "42" || list != "n[1-4]" {
		t.Errorf("Job() = %s %s %v", id, list, err)
	}
	if _, err := s.Start(t.Context(), "-n1", []string{"true"}, []byte("x")); err == nil {
		t.Error("a node name starting with '-' was accepted")
	}
}

// FuzzParseNodes: any output gives nodes with printable names and
// addresses, or an error; never a panic.
func FuzzParseNodes(f *testing.F) {
	b, _ := os.ReadFile("testdata/scontrol-show-node.txt")
	f.Add(string(b))
	f.Add("NodeName=a NodeAddr=b\nNodeName=c\n")
	f.Fuzz(func(t *testing.T, out string) {
		nodes, err := ParseNodes(out)
		if err != nil {
			return
		}
		for name, n := range nodes {
			if name != n.Name || n.Name == "" || n.Addr == "" || !printable(n.Name) || !printable(n.Addr) {
				t.Fatalf("node %q: %+v", name, n)
			}
		}
	})
}

// TestSlurmTokenDir: the default directory for token files has a name
// nobody can make first in a shared /tmp (a job ID is sequential): the
// job's ID and 16 random hex digits, one for the launcher's life.
func TestSlurmTokenDir(t *testing.T) {
	a, b := &Slurm{}, &Slurm{}
	d1, err := a.dir("42")
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := a.dir("42")
	d3, _ := b.dir("42")
	if d1 != d2 || d1 == d3 || !strings.HasPrefix(d1, "/tmp/linerate-job42-") || len(d1) != len("/tmp/linerate-job42-")+16 {
		t.Errorf("token directories %q, %q (same launcher), %q (another)", d1, d2, d3)
	}
	if d, _ := (&Slurm{Dir: "/scratch/x"}).dir("42"); d != "/scratch/x" {
		t.Errorf("a given Dir became %q", d)
	}
}
