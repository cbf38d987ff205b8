package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestTokenFileEdges: a token file of exactly maxTokenFile bytes (a good
// token and white space) is read; one byte more is refused.
func TestTokenFileEdges(t *testing.T) {
	tok, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{maxTokenFile, maxTokenFile + 1} {
		p := filepath.Join(dir, "token")
		b := append(append([]byte{}, tok...), bytes.Repeat([]byte("\n"), n-len(tok))...)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTokenFile(p)
		if n == maxTokenFile && (err != nil || !bytes.Equal(got, tok)) {
			t.Errorf("a token file of %d bytes: %v", n, err)
		}
		if n > maxTokenFile && (err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes")) {
			t.Errorf("a token file of %d bytes: %v, want refused as too large", n, err)
		}
	}
}

// TestNotRandomEdges: each sign of a made-up token at its threshold, on
// 32 hex characters (128 bits, n/2 = 16). The tokens are built by hand:
// the comment of each says what it holds.
func TestNotRandomEdges(t *testing.T) {
	rev := func(s string) string {
		b := []byte(s)
		slices.Reverse(b)
		return string(b)
	}
	// 14 steps up in the run 0-f, one in "01", one in "34"; no other step
	// of ±1, no repeat.
	up16 := "0123456789abcdef01" + "34" + "9e2c7a0f5b8d"
	// The same with "345": 17 steps up.
	up17 := "0123456789abcdef01" + "345" + "e2c7a0f5b8d"
	// Four copies of a block with no step of ±1 and no repeat: at period 8
	// every one of the 24 comparisons matches; changing 2 characters of
	// the last block leaves 22 (22 × 10 ≥ 24 × 9), changing 3 leaves 21.
	block := "1e5a9c3f"
	block12 := "1e5a9c3f7b2d"
	tests := []struct {
		name, tok, want string // want "" accepted
	}{
		{"16 repeats", "00112233445566778899aabbccddeeff", "repeated characters"},
		{"15 repeats", "00112233445566778899aabbccddeef0", ""},
		{"16 steps up", up16, ""},
		{"17 steps up", up17, "sequential characters"},
		{"16 steps down", rev(up16), ""},
		{"17 steps down", rev(up17), "sequential characters"},
		{"period 8, 22 of 24 match", block + block + block + "2e5a0c3f", "a pattern of 8 characters repeated"},
		{"period 8, 21 of 24 match", block + block + block + "2e5a0c3b", ""},
		// Period 12: the first 12 comparisons match, and of the last 8
		// (block12's first 8 against "1e5a0c3b") 6: 18 of 20, exactly 90%.
		{"period 12, 18 of 20 match", block12 + block12 + "1e5a0c3b", "a pattern of 12 characters repeated"},
		{"7 distinct characters", "0123456" + "0123456" + "0123456" + "0123456" + "0123", "7 distinct characters"},
		// The eight even hex digits in a random order, no two neighbours
		// equal or a step of ±1 apart, no period above 60%.
		{"8 distinct characters", "a206ecaea864628eae82c4a4ec02ae28", ""},
		{"31 hex characters", "0e5a9c3f1d7b2e8a4c6f0b9d3a5e7c1", "31 characters of hex hold at most 124 bits"},
	}
	for _, tt := range tests {
		if len(tt.tok) != 32 && tt.name != "31 hex characters" {
			t.Fatalf("%s: the token has %d characters, want 32", tt.name, len(tt.tok))
		}
		_, err := CheckToken([]byte(tt.tok))
		checkErr(t, tt.name, err, tt.want)
	}
}

// TestTokenAlphabetEdges: base64's padding at its bound (two '=' at most),
// each of its four symbols, a character outside both alphabets, and a
// pattern as long as half the token (the longest period looked for).
func TestTokenAlphabetEdges(t *testing.T) {
	body := "Zq8xW3vR7tKp2mYc9LhN4s" // 22 base64 characters: 132 bits
	tests := []struct {
		name, tok, want string // want "" accepted
	}{
		{"two '=' of padding", body + "==", ""},
		{"three '=' of padding", body + "===", "not hex or base64"},
		{"'+' and '/'", body[:20] + "+/", ""},
		{"'-' and '_'", body[:20] + "-_", ""},
		{"a '.'", body[:21] + ".", "not hex or base64"},
		{"period 16 of 32", "9e2c7a0f5b8d4136" + "9e2c7a0f5b8d4136", "a pattern of 16 characters repeated"},
	}
	for _, tt := range tests {
		_, err := CheckToken([]byte(tt.tok))
		checkErr(t, tt.name, err, tt.want)
	}
	if a, bits := tokenAlphabet([]byte(body + "==")); a != "base64" || bits != 6 {
		t.Errorf("padded base64: %q, %d bits a character", a, bits)
	}
}

// TestWriteNewTokenWriteFails: a token that could not be written whole
// (here the file-size limit stops it after 10 bytes, as a full disk
// would) is an error and leaves no file, even though the sync and the
// close that follow succeed. SIGXFSZ is ignored by Go's runtime, so the
// write returns EFBIG.
func TestWriteNewTokenWriteFails(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "token")
	lim := old
	lim.Cur = 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	err := WriteNewToken(path)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !strings.Contains(err.Error(), "writing the token to "+path) {
		t.Errorf("WriteNewToken past the file-size limit: %v", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("a cut token file was left: %v", serr)
	}
}
