package testbin

import (
	"slices"
	"testing"
)

func TestArgs(t *testing.T) {
	if got, want := Args("/t/l", ".", ""), []string{"build", "-o", "/t/l", "."}; !slices.Equal(got, want) {
		t.Errorf("without coverage: %q, want %q", got, want)
	}
	got := Args("/t/l", "../x", "atomic")
	want := []string{"build", "-o", "/t/l", "-cover", "-covermode=atomic", "-coverpkg=github.com/linerate/linerate/...", "../x"}
	if !slices.Equal(got, want) {
		t.Errorf("with coverage: %q, want %q", got, want)
	}
}
