package doctor

import (
	"slices"
	"testing"
)

// TestVisibleWidthEdges: escape sequences end at their final byte (0x40
// to 0x7e, both included); a lone or unterminated escape at the end of a
// string neither panics nor eats what follows it.
func TestVisibleWidthEdges(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"ab\x1b", 3},
		{"a\x1b[12", 1},
		{"\x1b[@x", 1},
		{"\x1b[~x", 1},
		{"\x1b[1;31mred\x1b[0m", 3},
	} {
		if got := visibleWidth(tt.s); got != tt.want {
			t.Errorf("visibleWidth(%q) = %d; want %d", tt.s, got, tt.want)
		}
	}
}

// TestWrapProseCut: a word longer than the room after a hang is cut at
// the room left; a hang as wide as the line leaves no room, and the word
// stays whole after it.
func TestWrapProseCut(t *testing.T) {
	if got, want := wrapProse("abcdefghij", "ab", "ab", 6), []string{"ababcd", "abefgh", "abij"}; !slices.Equal(got, want) {
		t.Errorf("cut after a prefix = %q; want %q", got, want)
	}
	if got, want := wrapProse("abcdef", "12345", "12345", 5), []string{"12345abcdef"}; !slices.Equal(got, want) {
		t.Errorf("no room = %q; want %q", got, want)
	}
}

// TestShellWordsEdges: runs of spaces and a trailing space make no empty
// words; a backslash closing a double-quoted string's input is kept.
func TestShellWordsEdges(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want []string
	}{
		{"a  b", []string{"a", "b"}},
		{"a ", []string{"a"}},
		{`echo "a\`, []string{"echo", `"a\`}},
	} {
		if got := shellWords(tt.s); !slices.Equal(got, tt.want) {
			t.Errorf("shellWords(%q) = %q; want %q", tt.s, got, tt.want)
		}
	}
}

// TestWrapCommandEdges: a command exactly as wide as the width stays on
// one line; a line is broken only when the next word and its " \" would
// pass the width.
func TestWrapCommandEdges(t *testing.T) {
	if got := wrapCommand("abc def", "", 7); !slices.Equal(got, []string{"abc def"}) {
		t.Errorf("exactly 7 wide = %q", got)
	}
	if got, want := wrapCommand("aa bb cc", "", 7), []string{"aa bb \\", "  cc"}; !slices.Equal(got, want) {
		t.Errorf("aa bb cc at 7 = %q; want %q", got, want)
	}
}
