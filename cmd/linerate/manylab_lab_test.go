package main

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
)

// TestBenchManyHostLab: 'bench lab:NAME' on a lab of many hosts, which
// has no hosts a and b, says so before any run and gives the commands
// that test it (exit 2), not "lab has no host a".
func TestBenchManyHostLab(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	const name = "t-many"
	truthLab(t, lab.Config{Name: name, Hosts: 3})
	_, errOut, code := runCLI(t, "bench", "lab:"+name, "-t", "1", "--no-store")
	for _, want := range []string{"lab t-many has 3 hosts (h01 to h03)", "linerate fleet run --lab t-many",
		"linerate lab exec t-many h02 -- linerate serve --bind 198.18.0.2",
		"linerate lab exec t-many h01 -- linerate bench 198.18.0.2 --token-file"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("lacks %q: %s", want, errOut)
		}
	}
	if code != 2 || strings.Contains(errOut, "has no host a") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
