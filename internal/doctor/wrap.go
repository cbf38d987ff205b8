package doctor

import (
	"strings"
	"unicode/utf8"
)

// Line wrapping for the text view. Hand-written: the two kinds of line
// need different rules — prose breaks at any space, a shell command only
// at a space outside quotes and with a backslash before the break, so
// that the wrapped lines stay one command when pasted.

// visibleWidth is the number of columns s takes on a terminal: runes,
// not counting ANSI colour sequences.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// word is one unit of wrapping and the spaces before it.
type word struct {
	space int
	text  string
}

// proseWords splits s at runs of spaces, remembering each run's length
// so that unbroken lines keep their spacing.
func proseWords(s string) []word {
	var out []word
	space := 0
	for s != "" {
		if s[0] == ' ' {
			space++
			s = s[1:]
			continue
		}
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		out = append(out, word{space, s[:i]})
		space, s = 0, s[i:]
	}
	return out
}

// wrapProse breaks s into lines no wider than width: the first line after
// first, the rest after hang (both prefixes of spaces or labels). A word
// longer than a whole line is cut (prose has no syntax to keep); a width
// of 0 or less leaves s on one line.
func wrapProse(s, first, hang string, width int) []string {
	if width <= 0 {
		return []string{first + s}
	}
	var lines []string
	line, start := first, true
	for _, w := range proseWords(s) {
		text := w.text
		for {
			sep := strings.Repeat(" ", w.space)
			if start {
				sep = ""
			}
			if visibleWidth(line)+len(sep)+visibleWidth(text) <= width {
				line += sep + text
				start = false
				break
			}
			if !start {
				lines = append(lines, line)
				line, start = hang, true
				continue
			}
			// Alone on its line and still too long: cut it, unless it
			// carries colour (cutting could split an escape sequence).
			room := width - visibleWidth(line)
			if room <= 0 || strings.ContainsRune(text, 0x1b) {
				line += text
				start = false
				break
			}
			r := []rune(text)
			if len(r) <= room {
				line += text
				start = false
				break
			}
			lines = append(lines, line+string(r[:room]))
			line, text = hang, string(r[room:])
		}
	}
	return append(lines, line)
}

// shellWords splits a command line at spaces outside quotes and outside
// backslash escapes: the places a line may be broken.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			cur.WriteByte(c)
			if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else if c == quote {
				quote = 0
			}
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			i++
			cur.WriteByte(s[i])
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
		case c == ' ':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// wrapCommand breaks a shell command line into lines no wider than width,
// each but the last ending in " \" so that the shell joins them again:
// the first line after indent, the rest after indent and two spaces. A
// word wider than a line is left whole (it cannot be broken without
// changing the command). A width of 0 or less leaves it on one line.
func wrapCommand(s, indent string, width int) []string {
	if width <= 0 || visibleWidth(indent+s) <= width {
		return []string{indent + s}
	}
	var lines []string
	line, empty := indent, true
	for _, w := range shellWords(s) {
		if !empty && visibleWidth(line)+1+visibleWidth(w)+2 > width {
			lines = append(lines, line+" \\")
			line, empty = indent+"  ", true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	return append(lines, line)
}
