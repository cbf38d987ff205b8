// Package testbin builds linerate's command for tests that run it as a
// child process (as root in a lab namespace, as an unprivileged user, or
// killed at a chosen instant).
//
// Under `go test -cover` the children count too: the binary is built with
// the test's own coverage mode over the whole module. go test merges into a
// package's profile only the counters of its own test binary (the pods
// whose meta-data hash is the test's), so a child's counters need a
// directory of their own: scripts/test.sh names it in LINERATE_COVERDIR,
// passes the same directory to every test binary as -test.gocoverdir, and
// merges the lot with `go tool covdata`. Build points GOCOVERDIR, which
// every child inherits, there.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// module is the import path pattern of every package of linerate.
const module = "github.com/linerate/linerate/..."

// Build compiles the package at dir (a path as go build takes it, e.g. "."
// or "../../cmd/linerate") into a new temporary directory and returns the
// binary's path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "linerate")
	out, err := exec.Command("go", Args(bin, dir, testing.CoverMode())...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	if d := os.Getenv("LINERATE_COVERDIR"); d != "" && testing.CoverMode() != "" {
		// Set for good, not with t.Setenv: children of later tests count
		// too, and the test binary's own counters go by its flag.
		os.Setenv("GOCOVERDIR", d)
	}
	return bin
}

// Args returns go's arguments to build dir into bin; coverMode is the
// running test's (testing.CoverMode(), "" when not counting coverage).
// The child's mode must be the test's: go test refuses to merge counters
// of two modes.
func Args(bin, dir, coverMode string) []string {
	args := []string{"build", "-o", bin}
	if coverMode != "" {
		args = append(args, "-cover", "-covermode="+coverMode, "-coverpkg="+module)
	}
	return append(args, dir)
}
