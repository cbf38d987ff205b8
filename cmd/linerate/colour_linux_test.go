package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestColourDecision: colour on a terminal unless NO_COLOR holds a value
// (an empty NO_COLOR= counts as unset, as no-color.org says), never on a
// pipe or a buffer.
func TestColourDecision(t *testing.T) {
	_, tty := openPTY(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	env := &cliEnv{}
	tests := []struct {
		name    string
		w       io.Writer
		noColor *string
		want    bool
		color   string // --color
		term    string
	}{
		{"tty", tty, nil, true, "", ""},
		{"tty TERM=dumb", tty, nil, false, "", "dumb"},
		{"tty --color=never", tty, nil, false, "never", ""},
		{"pipe --color=always", pw, nil, true, "always", ""},
		{"pipe --color=always NO_COLOR=1", pw, strPtr("1"), true, "always", ""},
		{"tty NO_COLOR=1", tty, strPtr("1"), false, "", ""},
		{"tty NO_COLOR=", tty, strPtr(""), true, "", ""},
		{"pipe", pw, nil, false, "", ""},
		{"pipe NO_COLOR=", pw, strPtr(""), false, "", ""},
		{"buffer", &bytes.Buffer{}, nil, false, "auto", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noColor == nil {
				unsetenv(t, "NO_COLOR")
			} else {
				t.Setenv("NO_COLOR", *tt.noColor)
			}
			env.color = tt.color
			if tt.term == "" {
				tt.term = "xterm-256color"
			}
			t.Setenv("TERM", tt.term)
			if got := env.colour(tt.w); got != tt.want {
				t.Errorf("colour = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDoctorColourOnTTY runs doctor with its output on a terminal: colour
// escapes without NO_COLOR, none with NO_COLOR=1.
func TestDoctorColourOnTTY(t *testing.T) {
	for _, tt := range []struct {
		noColor *string
		want    bool
	}{{nil, true}, {strPtr("1"), false}} {
		if tt.noColor == nil {
			unsetenv(t, "NO_COLOR")
		} else {
			t.Setenv("NO_COLOR", *tt.noColor)
		}
		out := runOnTTY(t, "doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--app-cpus", "6")
		if !strings.Contains(out, "pcie.link_downgraded") {
			t.Fatalf("no doctor output read from the terminal:\n%s", out)
		}
		if got := strings.Contains(out, "\x1b["); got != tt.want {
			t.Errorf("NO_COLOR=%v: colour escapes %v, want %v", tt.noColor != nil, got, tt.want)
		}
	}
}

// runOnTTY runs linerate in-process with stdout on a pseudo-terminal and
// returns what the terminal received.
func runOnTTY(t *testing.T, args ...string) string {
	t.Helper()
	master, slave := openPTY(t)
	got := make(chan []byte)
	go func() {
		// Reads end with EIO once the slave is closed and drained.
		b, _ := io.ReadAll(master)
		got <- b
	}()
	var errb bytes.Buffer
	code := run(args, strings.NewReader(""), slave, &errb)
	slave.Close()
	out := string(<-got)
	if code == 2 {
		t.Fatalf("%v: exit 2: %s", args, errb.String())
	}
	return out
}

func strPtr(s string) *string { return &s }

// unsetenv removes key for the rest of the test and restores it after.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	os.Unsetenv(key)
}
