package termui

import "testing"

func TestStyle(t *testing.T) {
	if got := (Style{}).Red("x"); got != "x" {
		t.Errorf("plain style coloured: %q", got)
	}
	if got := (Style{Colour: true}).Red("x"); got != "\x1b[1;31mx\x1b[0m" {
		t.Errorf("Red = %q", got)
	}
	if got := (Style{Colour: true}).Bold(""); got != "" {
		t.Errorf("empty text wrapped: %q", got)
	}
}
