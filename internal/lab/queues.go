package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/osthread"
)

// maxQueues bounds --queues: far more than the CPUs a lab runs on, and
// the masks of every queue are written one file at a time.
const maxQueues = 64

// A multi-queue lab steers queues to CPUs, the way a multi-queue NIC with
// one IRQ per queue does: a flow whose threads run on CPU i has its NET_RX
// softirq on CPU i at both ends, so where the stream threads are pinned
// decides which flows share a CPU (Documentation/networking/scaling.rst).
//
// A veth hands the peer the skb with the queue_mapping its TX queue gave
// it, and RPS reads a non-zero queue_mapping m as "recorded on RX queue
// m-1" (skb_get_rx_queue); TX queue 0 reads as unrecorded, RX queue 0. So
// XPS sends a thread on CPU i to TX queue i+1 (queue 0 is left to
// nothing), which arrives on the peer's RX queue i, which RPS steers to
// CPU i. With N queues, N-1 CPUs get a queue each: ask for one more queue
// than CPUs. Measured here: with the same queue index on both sides, every
// flow arrived on RX queue 0.

// queuesOf is how many TX queues a link has (1 when the kernel did not
// say).
func queuesOf(l netlink.Link) int { return max(l.Attrs().NumTxQueues, 1) }

// queuesFit reports whether a link has the queues asked for: any count
// when none was asked (the kernel's default, which may be one queue per
// possible CPU), else exactly that many.
func queuesFit(l netlink.Link, want int) bool { return want < 2 || queuesOf(l) == want }

func queuesPhrase(n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(", %d queues", n)
}

// steering is the RPS and XPS CPU masks of one end's queues, as CPU
// lists, by queue.
type steering struct {
	RPS [][]int
	XPS [][]int
}

// steeringFor is what a link of n queues should have on a host with the
// given CPUs: RX queue i and TX queue i+1 on cpus[i mod len(cpus)], TX
// queue 0 on none.
func steeringFor(n int, cpus []int) steering {
	s := steering{RPS: make([][]int, n), XPS: make([][]int, n)}
	s.XPS[0] = []int{}
	for i := range n {
		c := []int{cpus[i%len(cpus)]}
		s.RPS[i] = c
		if i+1 < n {
			s.XPS[i+1] = c
		}
	}
	return s
}

func (s steering) equal(o steering) bool {
	eq := func(a, b [][]int) bool {
		return slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
	}
	return eq(s.RPS, o.RPS) && eq(s.XPS, o.XPS)
}

// onlineCPUs lists the machine's online CPUs: the lab's namespaces share
// them.
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("reading the online CPUs: %w", err)
	}
	cpus, err := cpulist.Parse(strings.TrimSpace(string(b)))
	if err != nil || len(cpus) == 0 {
		return nil, fmt.Errorf("reading the online CPUs %q: %v", strings.TrimSpace(string(b)), err)
	}
	return cpus, nil
}

// queueFiles are the mask files of lab0's queues under a sysfs that shows
// the namespace's interfaces.
func queueFile(kind string, q int) string {
	dir, file := "rx-", "rps_cpus"
	if kind == "xps" {
		dir, file = "tx-", "xps_cpus"
	}
	return filepath.Join("/sys/class/net", Iface, "queues", fmt.Sprint(dir, q), file)
}

// inNSSysfs runs fn on a thrown-away thread that has entered ns with a
// sysfs of its own (as `ip netns exec` does): the queue files of a
// namespace's link are only visible through such a mount.
func inNSSysfs(ns string, fn func() error) error {
	return osthread.Throwaway(func() error {
		if err := enter(ns); err != nil {
			return err
		}
		return fn()
	})
}

// readSteering reads the RPS and XPS masks of lab0's n queues in ns.
func readSteering(ns string, n int) (steering, error) {
	var s steering
	err := inNSSysfs(ns, func() error {
		for q := range n {
			for _, kind := range []string{"rps", "xps"} {
				b, err := os.ReadFile(queueFile(kind, q))
				if err != nil {
					return fmt.Errorf("reading %s of %s queue %d: %w", kind, Iface, q, err)
				}
				cpus, err := cpulist.ParseMask(string(b))
				if err != nil {
					return fmt.Errorf("reading %s of %s queue %d: %w", kind, Iface, q, err)
				}
				if kind == "rps" {
					s.RPS = append(s.RPS, cpus)
				} else {
					s.XPS = append(s.XPS, cpus)
				}
			}
		}
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("in %s: %w", ns, err)
	}
	return s, nil
}

// writeSteering sets the masks of lab0's queues in ns.
func writeSteering(ns string, s steering) error {
	return inNSSysfs(ns, func() error {
		for q := range s.RPS {
			for kind, cpus := range map[string][]int{"rps": s.RPS[q], "xps": s.XPS[q]} {
				if err := os.WriteFile(queueFile(kind, q), []byte(cpulist.FormatMask(cpus)+"\n"), 0); err != nil {
					return fmt.Errorf("setting %s of %s queue %d in %s: %w", kind, Iface, q, ns, err)
				}
			}
		}
		return nil
	})
}

// steeringPlan steers a multi-queue lab0's queues to CPUs, if they are not
// already.
func steeringPlan(hv hostView, queues int) []change {
	if queues < 2 || queuesOf(hv.lab0) != queues {
		return nil
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return []change{{"steer the queues of " + Iface + " in " + hv.ns, func() error { return err }}}
	}
	want := steeringFor(queues, cpus)
	ns := hv.ns
	if cur, err := readSteering(ns, queues); err == nil && cur.equal(want) {
		return nil
	}
	return []change{{fmt.Sprintf("steer %s's %d queues in %s to CPUs %s (RPS and XPS)", Iface, queues, ns, cpulist.Format(cpus[:min(len(cpus), queues-1)])),
		func() error { return writeSteering(ns, want) }}}
}
