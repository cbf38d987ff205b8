// Package launch starts a command (the linerate agent) on the hosts of a
// fleet and stops it: over the system OpenSSH client, which honours the
// user's ~/.ssh/config (aliases, ProxyJump, agents, ControlMaster), or
// with srun inside a Slurm allocation. Kubernetes needs no launcher: its
// DaemonSet starts the agents (deploy/kubernetes).
//
// Both launchers run the same small POSIX shell wrapper on the host
// (wrapper.sh): it writes the one-time token it reads from its standard
// input to a new file only its user can read, starts the command in the
// background, and kills it (SIGTERM, then SIGKILL 5 s later) as soon as
// its standard input closes — when the controller stops it, but also when
// the controller dies or its connection drops, so no agent outlives the
// fleet run that started it. The command's standard output and error come
// back to the controller; the wrapper's own lines on standard error start
// with "linerate-launch: ".
package launch
