package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// SSH starts commands on hosts with the system OpenSSH client, so that
// the user's ~/.ssh/config applies (aliases, users, ports, ProxyJump,
// agents, ControlMaster), as Ansible does. The remote login shell must be
// a POSIX shell (sh, dash, bash, zsh, ksh).
type SSH struct {
	// Command is the ssh client; "" means ssh from PATH.
	Command string
	// Options go before the destination, e.g. "-F", "ssh_config".
	Options []string
	// Dir is the remote directory for the binary and the token files,
	// relative to the remote home unless absolute; "" means
	// DefaultRemoteDir. It is made private (mode 700) to its user.
	Dir string
	// StartCmd starts a local command; nil means exec.Cmd.Start. Tests
	// use it to run ssh inside a lab host.
	StartCmd func(*exec.Cmd) error
}

// DefaultRemoteDir holds the binary and token files on each host.
const DefaultRemoteDir = ".cache/linerate"

// sshOptions are always set: never prompt (a fleet run has no one to
// type a password 64 times), no terminal, give up on a host that does
// not answer within 5 s (not the kernel's two minutes of SYN retries),
// and notice a dead host within about 30 s.
var sshOptions = []string{"-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3"}

func (s *SSH) dir() string {
	if s.Dir == "" {
		return DefaultRemoteDir
	}
	return s.Dir
}

// command builds ssh [options] -- dest 'sh -c SCRIPT linerate-launch ARGS…'.
func (s *SSH) command(ctx context.Context, dest, script string, args ...string) (*exec.Cmd, error) {
	if dest == "" || strings.HasPrefix(dest, "-") {
		return nil, fmt.Errorf("ssh destination %q: empty or starting with '-'", dest)
	}
	name := s.Command
	if name == "" {
		name = "ssh"
	}
	remote := []string{"sh", "-c", shellQuote(script), "linerate-launch"}
	for _, a := range args {
		remote = append(remote, shellQuote(a))
	}
	argv := append(append(append([]string{}, s.Options...), sshOptions...), "--", dest, strings.Join(remote, " "))
	return exec.CommandContext(ctx, name, argv...), nil
}

// run runs script on dest with stdin and returns its standard output.
func (s *SSH) run(ctx context.Context, dest string, stdin io.Reader, script string, args ...string) (string, error) {
	cmd, err := s.command(ctx, dest, script, args...)
	if err != nil {
		return "", err
	}
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	start := s.StartCmd
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("%s: starting ssh: %w", dest, err)
	}
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			return "", fmt.Errorf("%s: ssh: %v", dest, err)
		}
		return "", fmt.Errorf("%s: ssh: %v: %s", dest, err, msg)
	}
	return out.String(), nil
}

// Install makes sure the host has the file binary (the linerate binary)
// and returns its remote path: Dir/linerate-<first 16 hex digits of its
// SHA-256>, so that two versions never mix and a host that has this one
// is not sent it again. A binary already there counts only if it is a
// regular file of the user's, in a directory of the user's made private
// (mode 700, not a link), whose SHA-256 is the local binary's: a file
// someone planted under the name, or one changed since, is replaced. The
// copy goes to a temporary name, is checked against the local SHA-256 and
// renamed into place, so an interrupted copy never leaves a half binary
// under the final name. copied says whether it had to be sent.
func (s *SSH) Install(ctx context.Context, dest, binary string) (path string, copied bool, err error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", false, fmt.Errorf("reading %s: %w", binary, err)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	path = strings.TrimSuffix(s.dir(), "/") + "/linerate-" + hexsum[:16]
	out, err := s.run(ctx, dest, nil, installedScript, s.dir(), path)
	if err != nil {
		return "", false, err
	}
	if f := strings.Fields(out); len(f) > 0 && f[0] == hexsum {
		return path, false, nil
	}
	out, err = s.run(ctx, dest, bytes.NewReader(data), installScript, s.dir(), path)
	if err != nil {
		return "", false, fmt.Errorf("copying %s to %s: %w", binary, dest, err)
	}
	if f := strings.Fields(out); len(f) == 0 || f[0] != hexsum {
		return "", false, fmt.Errorf("copying %s to %s: the copy's SHA-256 is %q, not %s", binary, dest, out, hexsum)
	}
	return path, true, nil
}

// installedScript prints the SHA-256 of the binary $2 in the directory
// $1 when both are the user's (the directory made private: nobody else
// can swap the file after the check), else "missing".
const installedScript = `if [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] && chmod 700 "$1" && [ -f "$2" ] && [ ! -L "$2" ] && [ -O "$2" ] && chmod 700 "$2"; then sha256sum "$2"; else echo missing; fi`

// installScript copies standard input to the binary $2 in the directory
// $1, made if missing and refused unless it is the user's own directory,
// through a temporary name, and prints the copy's SHA-256.
const installScript = `umask 077; mkdir -p "$1" && [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] && chmod 700 "$1" || { echo "linerate-install: $1 is not a directory of this user" >&2; exit 97; }; ` +
	`t="$2.tmp.$$" && cat >"$t" && chmod 700 "$t" && sha256sum "$t" && mv -f "$t" "$2"`

// Start starts argv on dest in the background with token in a new file
// (mode 600, under Dir) whose path replaces TokenFile in argv, and
// returns once it runs. The command's standard input is /dev/null.
func (s *SSH) Start(ctx context.Context, dest string, argv []string, token []byte) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: no command to start", dest)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	tok, err := tokenPath(s.dir())
	if err != nil {
		return nil, err
	}
	// Not CommandContext: the process must outlive ctx, which only
	// bounds the start; Stop ends it.
	cmd, err := s.command(context.Background(), dest, wrapper, append([]string{s.dir(), tok}, withToken(argv, tok)...)...)
	if err != nil {
		return nil, err
	}
	return start(ctx, dest, cmd, s.StartCmd, token)
}
