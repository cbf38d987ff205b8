package tune

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/testutil"
)

func TestBanIRQs(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no assignment", debianIRQBalance,
			debianIRQBalance + "# IRQs pinned by linerate tune (undo: linerate tune revert)\nIRQBALANCE_ARGS=\"--banirq=98 --banirq=99\"\n"},
		{"no final newline", "ENABLED=\"1\"",
			"ENABLED=\"1\"\n# IRQs pinned by linerate tune (undo: linerate tune revert)\nIRQBALANCE_ARGS=\"--banirq=98 --banirq=99\"\n"},
		{"keeps other arguments", "#IRQBALANCE_ARGS=\"x\"\nIRQBALANCE_ARGS='--deepestcache=3 --banirq=98'\nONESHOT=0\n",
			"#IRQBALANCE_ARGS=\"x\"\nIRQBALANCE_ARGS=\"--deepestcache=3 --banirq=98 --banirq=99\"\nONESHOT=0\n"},
		{"export, unquoted", "export IRQBALANCE_ARGS=--policyscript=/etc/p",
			"IRQBALANCE_ARGS=\"--policyscript=/etc/p --banirq=98 --banirq=99\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := banIRQs(tc.in, []int{98, 99})
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			if again := banIRQs(got, []int{98, 99}); again != got {
				t.Errorf("banning twice changed the file:\n%q", again)
			}
			// Apply rebuilds the file from the plan's line.
			if re := withArgsLine(tc.in, argsLine(got)); re != got {
				t.Errorf("withArgsLine gives\n%q", re)
			}
		})
	}
	if argsLine(debianIRQBalance) != "IRQBALANCE_ARGS unset" {
		t.Errorf("argsLine of Debian's file: %q", argsLine(debianIRQBalance))
	}
}

func TestLastByNamespace(t *testing.T) {
	root, _, p := ryzenX4Tree(t)
	var restarts []string
	dir := testutil.Scratch(t)
	res, err := Apply(p, treeTarget(t, root, &restarts), ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := Last(dir, p.NetNS); err != nil || j.ID != res.Journal {
		t.Errorf("Last: %v %v", j, err)
	}
	if _, err := Last(dir, p.NetNS+1); err == nil || !strings.Contains(err.Error(), "no journal with changes to revert") {
		t.Errorf("Last in another namespace: %v", err)
	}
	js, err := List(dir)
	if err != nil || len(js) != 1 || js[0].State() != StateApplied || js[0].Planned != len(p.Changes) {
		t.Errorf("List: %v %+v", err, js)
	}
}
