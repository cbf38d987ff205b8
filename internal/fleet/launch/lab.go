package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/linerate/linerate/internal/lab"
)

// Lab starts commands in the hosts of a lab of many hosts, through the
// same wrapper as the other launchers, run by the local sh inside the
// host's namespaces: so an agent in a lab host is started, given its
// token and stopped exactly as one on a remote host is.
type Lab struct {
	// Name is the lab's name.
	Name string
	// Dir is the directory for token files; "" means a new private
	// directory under os.TempDir, removed by Close.
	Dir string

	made string
}

// Start starts argv in host h with token in a new file whose path replaces
// TokenFile in argv, and returns once it runs.
func (l *Lab) Start(ctx context.Context, h lab.Host, argv []string, token []byte) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: no command to start", h)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	if l.Dir == "" {
		d, err := os.MkdirTemp("", "linerate-fleet-")
		if err != nil {
			return nil, fmt.Errorf("making a directory for token files: %w", err)
		}
		l.Dir, l.made = d, d
	}
	tok, err := tokenPath(l.Dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", append([]string{"-c", wrapper, "linerate-launch", l.Dir, tok}, withToken(argv, tok)...)...)
	return start(ctx, string(h), cmd, func(c *exec.Cmd) error { return lab.Start(l.Name, h, c) }, token)
}

// Close removes the token directory Start made, if it did.
func (l *Lab) Close() error {
	if l.made == "" {
		return nil
	}
	err := os.RemoveAll(l.made)
	l.Dir, l.made = "", ""
	return err
}
