// Package termui styles human output: ANSI colour only when the caller
// says the stream is a terminal (and NO_COLOR is unset or empty), plain text
// otherwise, so logs and pipes stay clean.
package termui

// Style applies colour when enabled.
type Style struct{ Colour bool }

func (s Style) wrap(code, text string) string {
	if !s.Colour || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Bold emphasises text.
func (s Style) Bold(t string) string { return s.wrap("1", t) }

// Dim de-emphasises text.
func (s Style) Dim(t string) string { return s.wrap("2", t) }

// Red marks critical things.
func (s Style) Red(t string) string { return s.wrap("1;31", t) }

// Yellow marks warnings.
func (s Style) Yellow(t string) string { return s.wrap("33", t) }

// Cyan marks information.
func (s Style) Cyan(t string) string { return s.wrap("36", t) }

// Green marks what is fine.
func (s Style) Green(t string) string { return s.wrap("32", t) }
