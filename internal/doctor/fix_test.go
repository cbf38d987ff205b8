package doctor

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/termui"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ethtool", "-G", "eth0", "rx", "4096"}, "ethtool -G eth0 rx 4096"},
		{[]string{"sysctl", "-w", "net.ipv4.tcp_rmem=4096 131072 33554432"}, "sysctl -w 'net.ipv4.tcp_rmem=4096 131072 33554432'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"printf", `%s\n`, ""}, `printf '%s\n' ''`},
		{[]string{"a$b", "c*", "d;e", "f|g", "h>i", "~j", "k l"}, `'a$b' 'c*' 'd;e' 'f|g' 'h>i' '~j' 'k l'`},
		{[]string{"0000:01:00.0", "--app-cpus", "0-3,8", "x=y", "a+b@c%d"}, "0000:01:00.0 --app-cpus 0-3,8 x=y a+b@c%d"},
		// The ends of each range are letters and digits too.
		{[]string{"a", "z", "A", "Z", "0", "9", "az09AZ"}, "a z A Z 0 9 az09AZ"},
		{[]string{"`", "{", "@", "[", "/", ":"}, "'`' '{' @ '[' / :"},
	}
	for _, tt := range tests {
		if got := Quote(tt.argv); got != tt.want {
			t.Errorf("Quote(%q) = %s; want %s", tt.argv, got, tt.want)
		}
	}
	if got := ShellLine([]string{"sh", "-c", "for i in 1 2; do echo $i; done"}); got != "for i in 1 2; do echo $i; done" {
		t.Errorf("ShellLine(sh -c) = %s", got)
	}
	if got := ShellLine([]string{"sh", "-x", "y"}); got != "sh -x y" {
		t.Errorf("ShellLine(sh -x y) = %s", got)
	}
}

// TestQuoteRoundTrip: what Quote writes, the shell reads back as the same
// words.
func TestQuoteRoundTrip(t *testing.T) {
	argv := []string{"it's", "a b", `back\slash`, "$HOME", "*", "", "tab\there", "\"dq\""}
	line := "set -- " + Quote(argv) + `; for a in "$@"; do printf '[%s]' "$a"; done`
	got, err := exec.Command("sh", "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", line, err)
	}
	want := ""
	for _, a := range argv {
		want += "[" + a + "]"
	}
	if string(got) != want {
		t.Errorf("the shell read %s; want %s", got, want)
	}
}

func TestWrapProse(t *testing.T) {
	got := wrapProse("the quick brown fox jumps over the lazy dog", "  ", "    ", 20)
	want := []string{"  the quick brown", "    fox jumps over", "    the lazy dog"}
	if !slices.Equal(got, want) {
		t.Errorf("wrapProse = %q; want %q", got, want)
	}
	// A word longer than a line is cut at the width.
	got = wrapProse("abcdefghijklmnopqrstuvwxyz", "", "", 10)
	if !slices.Equal(got, []string{"abcdefghij", "klmnopqrst", "uvwxyz"}) {
		t.Errorf("cut = %q", got)
	}
	// Double spaces stay within a line; width 0 does not wrap.
	if got := wrapProse("a=1  b=2", "", "", 0); !slices.Equal(got, []string{"a=1  b=2"}) {
		t.Errorf("width 0 = %q", got)
	}
	if got := wrapProse("a=1  b=2  c=3", "", "", 9); !slices.Equal(got, []string{"a=1  b=2", "c=3"}) {
		t.Errorf("pairs = %q", got)
	}
	// Colour escapes take no columns; a coloured long word is not cut.
	st := termui.Style{Colour: true}
	if got := wrapProse(st.Red("abc")+" def", "", "", 7); len(got) != 1 {
		t.Errorf("coloured = %q", got)
	}
	if got := wrapProse(st.Red("abcdefghijkl"), "", "", 5); len(got) != 1 || visibleWidth(got[0]) != 12 {
		t.Errorf("coloured long word = %q", got)
	}
	if n := visibleWidth("→ 28.6 °C"); n != 9 {
		t.Errorf("visibleWidth counts bytes: %d", n)
	}
}

// unwrap joins the lines wrapCommand wrote back into one command line.
func unwrap(lines []string) string {
	var parts []string
	for _, l := range lines {
		parts = append(parts, strings.TrimSuffix(strings.TrimSpace(l), " \\"))
	}
	return strings.Join(parts, " ")
}

func TestWrapCommand(t *testing.T) {
	line := `for irq in 98 99 109 110 111 112 113 114 115 116 117 118 119; do echo "$irq: $(cat /proc/irq/$irq/effective_affinity_list)"; done`
	for _, width := range []int{40, 60, 80} {
		lines := wrapCommand(line, "    ", width)
		if len(lines) < 2 {
			t.Fatalf("width %d: not wrapped: %q", width, lines)
		}
		for i, l := range lines {
			if i < len(lines)-1 && !strings.HasSuffix(l, " \\") {
				t.Errorf("width %d: line %d lacks the continuation: %q", width, i, l)
			}
			if visibleWidth(l) > width && !strings.Contains(l, "effective_affinity_list") {
				t.Errorf("width %d: line %d is %d wide: %q", width, i, visibleWidth(l), l)
			}
		}
		if got := unwrap(lines); !slices.Equal(shellWords(got), shellWords(line)) {
			t.Errorf("width %d: words changed:\n%s\n%s", width, got, line)
		}
		if out, err := exec.Command("sh", "-n", "-c", strings.Join(lines, "\n")).CombinedOutput(); err != nil {
			t.Errorf("width %d: sh -n: %s\n%s", width, out, strings.Join(lines, "\n"))
		}
	}
	// Quoted spaces and escaped quotes are not break points.
	words := shellWords(`echo 'a b' "c \" d" e\ f IRQ=\"x y\"`)
	if want := []string{"echo", "'a b'", `"c \" d"`, `e\ f`, `IRQ=\"x`, `y\"`}; !slices.Equal(words, want) {
		t.Errorf("shellWords = %q; want %q", words, want)
	}
	if got := wrapCommand("short", "  ", 80); !slices.Equal(got, []string{"  short"}) {
		t.Errorf("short = %q", got)
	}
	if got := wrapCommand("a b c", "", 0); !slices.Equal(got, []string{"a b c"}) {
		t.Errorf("width 0 = %q", got)
	}
}

// TestFixJSON: a fix marshals with every field named by the schema
// (null where absent), and documents from before fixes were structured
// (plain strings) still load, shown as they were.
func TestFixJSON(t *testing.T) {
	f := do("Raise it", "ethtool", "-G", "eth0", "rx", "4096").verify("Read it back", "ethtool", "-g", "eth0")
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action":"Raise it","command":["ethtool","-G","eth0","rx","4096"],"persist":null,"verify":{"action":"Read it back","command":["ethtool","-g","eth0"]}}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(do("Reseat the card").persist("Nothing to keep"))
	if string(b) != `{"action":"Reseat the card","command":null,"persist":{"action":"Nothing to keep","command":null},"verify":null}` {
		t.Errorf("prose-only JSON: %s", b)
	}

	var old Finding
	if err := json.Unmarshal([]byte(`{"id":"x","fix":["ethtool -G eth0 rx 4096","or: linerate tune --apply"]}`), &old); err != nil {
		t.Fatal(err)
	}
	if got := old.FixLines(); !slices.Equal(got, []string{"ethtool -G eth0 rx 4096", "or: linerate tune --apply"}) {
		t.Errorf("legacy lines = %q", got)
	}
	var s Fix
	if err := json.Unmarshal([]byte(`{"action":"a","command":null,"persist":"keep it","verify":{"action":"check","command":["true"]}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Persist == nil || s.Persist.Action != "keep it" || s.Persist.Command != nil || s.Verify.Command[0] != "true" {
		t.Errorf("step from prose: %+v", s)
	}
	if got := s.Lines(); !slices.Equal(got, []string{"# a", "# keep it", "# check", "true"}) {
		t.Errorf("Lines = %q", got)
	}
	for _, bad := range []string{`7`, `{"action": 7}`} {
		var x Fix
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("Unmarshal(%s) = %+v; want an error", bad, x)
		}
		var y Step
		if err := json.Unmarshal([]byte(bad), &y); err == nil {
			t.Errorf("Step Unmarshal(%s) = %+v; want an error", bad, y)
		}
	}
	if p := do("a").persist("keep", "true"); p.Persist == nil || len(p.Persist.Command) != 1 || p.Command != nil {
		t.Errorf("persist with a command: %+v", p)
	}
	full := Finding{Fix: []Fix{f, do("Then", shell("true")...)}}
	if got := full.Commands(); len(got) != 3 || got[2][0] != "sh" {
		t.Errorf("Commands = %q", got)
	}
}

// TestTextWidthEveryTree renders every test host at 80 and 100 columns:
// no line is wider, and every fix command is in the text, whole once its
// continuation lines are joined.
func TestTextWidthEveryTree(t *testing.T) {
	entries, err := os.ReadDir(hostsDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, opts := range []Options{{}, {AppCPUs: []int{1}}} {
			rep := diagnoseTree(t, e.Name(), opts)
			for _, width := range []int{80, 100} {
				var b bytes.Buffer
				if err := WriteText(&b, rep, termui.Style{}, width); err != nil {
					t.Fatal(err)
				}
				text := b.String()
				for i, l := range strings.Split(text, "\n") {
					if visibleWidth(l) > width {
						t.Errorf("%s at %d: line %d is %d wide: %q", e.Name(), width, i+1, visibleWidth(l), l)
					}
				}
				joined := strings.Join(strings.Fields(strings.ReplaceAll(text, " \\\n", " ")), " ")
				for _, f := range rep.Findings {
					for _, c := range f.Commands() {
						if line := strings.Join(strings.Fields(ShellLine(c)), " "); !strings.Contains(joined, line) {
							t.Errorf("%s at %d: %s's command %q is not in the text", e.Name(), width, f.ID, line)
						}
					}
				}
			}
		}
	}
}
