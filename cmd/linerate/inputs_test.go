package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchInputsCheckedFirst: -t 0, an interval out of range and an
// empty stream count in --sweep-streams are refused with exit 2 before
// any connection (the peer, port 1 of loopback, listens to nothing: a
// run that tried to connect would fail with "connection refused").
func TestBenchInputsCheckedFirst(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "0"}, "-t 0: give a measured time above 0"},
		{[]string{"-i", "10ms"}, "-i 10ms: must be 100ms to 1m0s"},
		{[]string{"-i", "61"}, "-i 1m1s: must be 100ms to 1m0s"},
		{[]string{"--sweep-streams", "1,,4"}, `--sweep-streams "1,,4": an empty stream count between commas`},
		{[]string{"--sweep-streams", "1,2,"}, `--sweep-streams "1,2,": an empty stream count`},
	} {
		_, errOut, code := runCLI(t, append([]string{"bench", "127.0.0.1:1", "--no-store", "--token-file", "/nonexistent"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("bench %v: exit %d, %q; want exit 2 and %q on one line", c.args, code, errOut, c.want)
		}
	}
}

// TestCLITexts: missing or extra arguments are named, typos get a
// suggestion on the one error line, report's --run shows as "--run ID"
// without "(default [])", and the help no longer calls every lab
// two-host.
func TestCLITexts(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "linerate: bench needs PEER: missing PEER (see 'linerate bench --help')\n"},
		{[]string{"compare", "base"}, "linerate: compare needs A and B: missing B (see 'linerate compare --help')\n"},
		{[]string{"compare", "a", "b", "c"}, "linerate: compare takes A and B, and \"c\" is one argument too many (see 'linerate compare --help')\n"},
		{[]string{"docter"}, "linerate: unknown command \"docter\" for \"linerate\" (did you mean doctor?)\n"},
		{[]string{"doctor", "--ifcae", "x"}, "linerate: unknown flag: --ifcae (did you mean --iface? see 'linerate doctor --help')\n"},
		{[]string{"report", "--run", "x"}, "linerate: invalid argument \"x\" for \"--run\" flag: \"x\" is not a run ID ('linerate history' lists them) (see 'linerate report --help')\n"},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 2 || errOut != c.want {
			t.Errorf("%v: exit %d %q, want 2 %q", c.args, code, errOut, c.want)
		}
	}
	out, _, _ := runCLI(t, "report", "--help")
	if !strings.Contains(out, "--run ID ") || strings.Contains(out, "int64Slice") || strings.Contains(out, "(default [])") {
		t.Errorf("report --help:\n%s", out)
	}
	out, _, _ = runCLI(t, "--help")
	if strings.Contains(out, "two-host") {
		t.Errorf("linerate --help calls the lab two-host:\n%s", out)
	}
}

// TestSnapshotOutput: snapshot -o refuses to replace a file unless
// --force, names a missing directory instead of a temporary file, and
// says what it wrote in files and symlinks.
func TestSnapshotOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.tar.gz")
	if err := os.WriteFile(out, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "snapshot", "-o", out)
	if b, _ := os.ReadFile(out); code != 2 || !strings.Contains(errOut, out+" exists: pick another -o, or --force") || string(b) != "keep" {
		t.Errorf("existing file: exit %d %q, file now %q", code, errOut, b)
	}
	stdout, errOut, code := runCLI(t, "snapshot", "-o", out, "--force")
	if code != 0 || !regexp.MustCompile(`^wrote .* \(\d+ files and \d+ symlinks read from this host, \d+ KiB\)`).MatchString(stdout) {
		t.Errorf("--force: exit %d %q %q", code, stdout, errOut)
	}
	missing := filepath.Join(dir, "nope", "s.tar.gz")
	_, errOut, code = runCLI(t, "snapshot", "-o", missing)
	if code != 2 || errOut != "linerate: -o "+missing+": the directory "+filepath.Dir(missing)+" does not exist (create it, or pick another -o)\n" {
		t.Errorf("missing directory: exit %d %q", code, errOut)
	}
}
