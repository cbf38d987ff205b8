package bench

import (
	"bytes"
	"fmt"
	"strconv"
)

// quoteBareJSON turns the JSON-like text perftest wrote before January
// 2024 (perftest issue #216: keys and string values unquoted, a trailing
// comma before every closing brace, "TX_depth : 1" with a space before the
// colon) into JSON. Bare words become strings unless they read as
// numbers; quoted strings are kept; trailing commas are dropped. Valid
// JSON passes through unchanged. Hand-written: no library reads this
// dialect, and it is a few lines.
func quoteBareJSON(in []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(in) + len(in)/4)
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '"':
			j, err := endOfString(in, i)
			if err != nil {
				return nil, err
			}
			out.Write(in[i:j])
			i = j
		case c == ',':
			if k := skipSpace(in, i+1); k < len(in) && (in[k] == '}' || in[k] == ']') {
				i++ // a trailing comma
				continue
			}
			out.WriteByte(c)
			i++
		case isStructural(c) || isSpace(c):
			out.WriteByte(c)
			i++
		default:
			j := i
			for j < len(in) && !isStructural(in[j]) && in[j] != '"' && in[j] != '\n' {
				j++
			}
			word := bytes.TrimSpace(in[i:j])
			out.Write(bareValue(word))
			out.Write(in[i+len(bytes.TrimRight(in[i:j], " \t\r")) : j]) // keep the spaces after the word
			i = j
		}
	}
	return out.Bytes(), nil
}

// bareValue writes a bare word as JSON: numbers and literals as they are,
// anything else quoted.
func bareValue(w []byte) []byte {
	if _, err := strconv.ParseFloat(string(w), 64); err == nil && isJSONNumber(w) {
		return w
	}
	switch string(w) {
	case "true", "false", "null":
		return w
	}
	return []byte(strconv.Quote(string(w)))
}

// isJSONNumber rejects what ParseFloat takes but JSON does not ("Inf",
// "0x10", "+1", ".5", "1_000").
func isJSONNumber(w []byte) bool {
	if len(w) == 0 {
		return false
	}
	if w[0] == '-' {
		w = w[1:]
	}
	if len(w) == 0 || w[0] < '0' || w[0] > '9' {
		return false
	}
	for _, c := range w {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

func endOfString(in []byte, i int) (int, error) {
	for j := i + 1; j < len(in); j++ {
		switch in[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at byte %d", i)
}

func skipSpace(in []byte, i int) int {
	for i < len(in) && isSpace(in[i]) {
		i++
	}
	return i
}

func isStructural(c byte) bool {
	return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ','
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
