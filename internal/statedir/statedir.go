// Package statedir says where linerate keeps state that must outlive one
// command: lab records, tune journals, the result database.
//
// Decision (docs/architecture.md, "State"): $LINERATE_STATE_DIR wins; otherwise root
// uses /var/lib/linerate (journals must survive a reboot to be reverted),
// and other users $XDG_STATE_HOME/linerate (~/.local/state/linerate).
package statedir

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the state directory, without creating it.
func Dir() string {
	if d := os.Getenv("LINERATE_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/linerate"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "linerate")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("linerate-%d", os.Geteuid()))
	}
	return filepath.Join(home, ".local", "state", "linerate")
}

// Sub returns Dir()/name, creating it (mode 0700) if needed.
func Sub(name string) (string, error) {
	d := filepath.Join(Dir(), name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("creating state directory %s: %w (set LINERATE_STATE_DIR to a writable directory)", d, err)
	}
	return d, nil
}
