package runner

import (
	"context"

	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/fleet/launch"
	"github.com/linerate/linerate/internal/lab"
)

// LabLauncher starts agents in the hosts of a lab of many hosts; the hosts
// share this machine's file system, so Bin runs there as it is.
type LabLauncher struct {
	Lab *launch.Lab
	Bin string
}

// Binary returns Bin.
func (l LabLauncher) Binary(context.Context, fleet.Host) (string, error) { return l.Bin, nil }

// Start starts argv in the lab host named h.Name.
func (l LabLauncher) Start(ctx context.Context, h fleet.Host, argv []string, token []byte) (*launch.Process, error) {
	return l.Lab.Start(ctx, lab.Host(h.Name), argv, token)
}

// SSHLauncher copies Bin to each host over ssh (when the host lacks it)
// and starts agents there.
type SSHLauncher struct {
	SSH *launch.SSH
	Bin string
}

func dest(h fleet.Host) string {
	if h.SSH != "" {
		return h.SSH
	}
	return h.Address
}

// Binary installs Bin on h and returns its path there.
func (l SSHLauncher) Binary(ctx context.Context, h fleet.Host) (string, error) {
	path, _, err := l.SSH.Install(ctx, dest(h), l.Bin)
	return path, err
}

// Start starts argv on h over ssh.
func (l SSHLauncher) Start(ctx context.Context, h fleet.Host, argv []string, token []byte) (*launch.Process, error) {
	return l.SSH.Start(ctx, dest(h), argv, token)
}

// SlurmLauncher starts agents as srun steps of the allocation, one per
// node; Bin must be valid on every node (a shared file system, or a copy
// made with sbcast).
type SlurmLauncher struct {
	Slurm *launch.Slurm
	Bin   string
}

// Binary returns Bin.
func (l SlurmLauncher) Binary(context.Context, fleet.Host) (string, error) { return l.Bin, nil }

// Start starts argv on the node named h.Name.
func (l SlurmLauncher) Start(ctx context.Context, h fleet.Host, argv []string, token []byte) (*launch.Process, error) {
	return l.Slurm.Start(ctx, h.Name, argv, token)
}
