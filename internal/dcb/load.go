package dcb

import (
	"fmt"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
)

// Reading is one interface's DCB facts: the configuration, or why it
// could not be read.
type Reading struct {
	Config *IEEE
	// Error is the failed read's line ("EOPNOTSUPP: operation not
	// supported": the driver has no DCB), empty when Config is set.
	Error string
}

// NotSupported reports a reading whose driver has no DCB at all.
func (r *Reading) NotSupported() bool {
	return r != nil && r.Config == nil && (strings.HasPrefix(r.Error, "EOPNOTSUPP") || strings.HasPrefix(r.Error, "EINVAL"))
}

// Read reads iface live through cl.
func Read(cl *Client, iface string) *Reading {
	c, err := cl.Get(iface)
	if err != nil {
		return &Reading{Error: ErrorLine(err)}
	}
	return &Reading{Config: c}
}

// Files returns the reading as a tree keeps it (Files).
func (r *Reading) Files() (map[string][]byte, error) {
	if r.Config == nil {
		return map[string][]byte{FileError: []byte(r.Error + "\n")}, nil
	}
	return Files(r.Config, nil)
}

// Load reads what a host tree holds for iface. It returns nil, nil when
// the tree holds nothing (captured without DCB facts), and an error naming
// the file when one is malformed.
func Load(fs *hostfs.FS, iface string) (*Reading, error) {
	dir := Dir(iface)
	if !fs.Exists(dir) {
		return nil, nil
	}
	rel := dir + "/" + FileIEEE
	b, err := fs.ReadFile(rel)
	if err == nil {
		c, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w (see docs/schema/dcb-ieee.schema.json)", fs.Display(rel), err)
		}
		return &Reading{Config: c}, nil
	}
	if !hostfs.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", fs.Display(rel), err)
	}
	rel = dir + "/" + FileError
	b, err = fs.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w (a DCB directory holds ieee.json or error)", fs.Display(rel), err)
	}
	line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if line == "" {
		return nil, fmt.Errorf("reading %s: empty (it must hold the errno name of the failed read)", fs.Display(rel))
	}
	return &Reading{Error: line}, nil
}
