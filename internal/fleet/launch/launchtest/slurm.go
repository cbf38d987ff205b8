package launchtest

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
)

// SlurmCluster is munged, one slurmctld in the lab's switch (the
// controller's seat, 198.18.0.254) and one slurmd per lab host, node
// names h01, h02, … at the hosts' lab addresses.
type SlurmCluster struct {
	// Conf is slurm.conf; every client command needs SLURM_CONF=Conf.
	Conf string
	// Dir holds the configuration, state, spool directories and logs.
	Dir string
	// Nodes are the node names, in order.
	Nodes []string
	name  string
}

// Env is the environment of a Slurm client command: this process's, with
// SLURM_CONF set and no allocation of an outer job.
func (c *SlurmCluster) Env() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SLURM_") {
			env = append(env, e)
		}
	}
	return append(env, "SLURM_CONF="+c.Conf)
}

// Command returns a Slurm client command with Env, to run in the switch
// with Start.
func (c *SlurmCluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	return cmd
}

// Start starts cmd in the lab's switch, where the controller sits.
func (c *SlurmCluster) Start(cmd *exec.Cmd) error { return lab.Start(c.name, lab.Switch, cmd) }

// Output runs a client command in the switch and returns its output.
func (c *SlurmCluster) Output(name string, args ...string) (string, error) {
	return output(c.name, lab.Switch, c.Command(name, args...))
}

// StartSlurm starts the cluster over members of lab name and waits until
// every node is idle; everything stops in the cleanup. It follows Debian's
// slurm-wlm 22.05 in network namespaces: cgroup.conf names the v1 plugin
// (`ip netns exec` and lab.Start remount /sys, so slurmd's cgroup
// autodetection finds nothing), process tracking by /proc, no task
// plugin, spool directories made beforehand, and munged's socket
// directory searchable by all (mode 755).
func StartSlurm(t testing.TB, name string, members []lab.Member) *SlurmCluster {
	t.Helper()
	NeedTools(t, "slurm-wlm munge", "munged", "slurmctld", "slurmd", "srun", "salloc", "scontrol", "sinfo")
	dir := privateDir(t, "linerate-slurm-")
	c := &SlurmCluster{Conf: filepath.Join(dir, "etc", "slurm.conf"), Dir: dir, name: name}
	for _, d := range []string{"etc", "munge", "state", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// munged: a random key, its socket reachable from every namespace
	// (a pathname socket), in the foreground so that its PID is ours.
	key := make([]byte, 1024)
	rand.Read(key)
	write(t, filepath.Join(dir, "etc", "munge.key"), string(key), 0o600)
	sock := filepath.Join(dir, "munge", "munge.socket.2")
	munged := exec.Command("munged", "--foreground", "--key-file="+filepath.Join(dir, "etc", "munge.key"),
		"--socket="+sock, "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"), "--log-file="+filepath.Join(dir, "log", "munged.log"))
	daemon(t, name, lab.Switch, filepath.Join(dir, "log", "munged.out"), munged)
	if err := poll(5*time.Second, func() error { _, err := os.Stat(sock); return err }); err != nil {
		t.Fatalf("munged did not start: %v (log %s)", err, filepath.Join(dir, "log"))
	}

	var nodes strings.Builder
	for _, m := range members {
		c.Nodes = append(c.Nodes, string(m.Host))
		if err := os.MkdirAll(filepath.Join(dir, "spool", "slurmd."+string(m.Host)), 0o755); err != nil {
			t.Fatal(err)
		}
		// NodeHostname is what lab.Start names the host (its namespace).
		fmt.Fprintf(&nodes, "NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=1 RealMemory=256 State=UNKNOWN\n",
			m.Host, m.Address, m.Namespace)
	}
	ctl := lab.Namespace(name, lab.Switch)
	write(t, c.Conf, fmt.Sprintf(`ClusterName=linerate
SlurmctldHost=%[2]s(%[3]s)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool/slurmd.%%n
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/spool/slurmd.%%n/slurmd.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd.%%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MailProg=/bin/true
%[5]sPartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, dir, ctl, lab.SwitchAddr, sock, nodes.String()), 0o644)
	write(t, filepath.Join(dir, "etc", "cgroup.conf"), "CgroupPlugin=cgroup/v1\n", 0o644)

	daemon(t, name, lab.Switch, filepath.Join(dir, "log", "slurmctld.out"),
		c.Command("slurmctld", "-D", "-c", "-f", c.Conf))
	for _, m := range members {
		daemon(t, name, m.Host, filepath.Join(dir, "log", "slurmd."+string(m.Host)+".out"),
			c.Command("slurmd", "-D", "-N", string(m.Host), "-f", c.Conf))
	}
	want := fmt.Sprintf("%d idle", len(members))
	err := poll(30*time.Second, func() error {
		out, err := c.Output("sinfo", "-h", "-o", "%D %t")
		if err == nil && strings.TrimSpace(out) != want {
			err = fmt.Errorf("sinfo: %q, want %q", strings.TrimSpace(out), want)
		}
		return err
	})
	if err != nil {
		t.Fatalf("the Slurm cluster did not come up: %v (logs in %s)", err, filepath.Join(dir, "log"))
	}
	return c
}
