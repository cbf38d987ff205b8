package toolserver

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// One-time credentials of the tool servers an agent starts. Both ends of
// an agent session hold a secret nobody else has (agent.ToolRequest.Secret,
// agent.ToolSession.Secret); the credentials are derived from it, so no
// password crosses the wire:
//
//   - iperf3 runs with RSA authentication: the agent writes a fresh
//     authorized-users file holding the one user and the SHA-256 of
//     "{user}password" (iperf3's format), and a private key; the client
//     gets the public key in tool_started and passes --username,
//     --rsa-public-key-path and the password in IPERF3_PASSWORD, which
//     iperf3 encrypts with that key.
//   - iperf2 runs with --permit-key: the server rejects every connection
//     that does not carry the key. iperf2 sends it in clear and the
//     server's command line shows it to local users (/proc/PID/cmdline):
//     it keeps strangers off the server, not an eavesdropper.
//   - perftest has no authentication at all: the agent starts it only
//     when its operator allowed it (serve --allow-perftest).
type toolCreds struct {
	user, password, permitKey string
}

// credsFrom derives the credentials from a session's tool secret.
func credsFrom(secret []byte) (toolCreds, error) {
	if len(secret) < 16 {
		return toolCreds{}, errors.New("no tool secret from the agent session (an agent of another version?)")
	}
	derive := func(label string, n int) (string, error) {
		b, err := hkdf.Key(sha256.New, secret, nil, label, n)
		return hex.EncodeToString(b), err
	}
	var c toolCreds
	var err error
	if c.user, err = derive("linerate iperf3 user", 6); err != nil {
		return c, err
	}
	c.user = "lr" + c.user
	if c.password, err = derive("linerate iperf3 password", 24); err != nil {
		return c, err
	}
	if c.permitKey, err = derive("linerate iperf2 permit key", 16); err != nil {
		return c, err
	}
	return c, nil
}

// authorizedUser is iperf3's authorized-users line for c: "user,sha256 of
// {user}password" in hex (iperf_auth.c, check_authentication).
func (c toolCreds) authorizedUser() string {
	sum := sha256.Sum256([]byte("{" + c.user + "}" + c.password))
	return c.user + "," + hex.EncodeToString(sum[:]) + "\n"
}

// toolAuth is the tool_started message's auth field.
type toolAuth struct {
	RSAPublicKey string `json:"rsa_public_key,omitempty"` // PEM, for iperf3's client
}

// The agent's RSA key for iperf3, made once per process: making one takes
// a good part of a second, and its private half never leaves this host
// (each session's server reads it from a file of its own, removed after).
var (
	iperf3KeyOnce sync.Once
	iperf3Key     *rsa.PrivateKey
	iperf3KeyErr  error
)

func agentRSAKey() (*rsa.PrivateKey, error) {
	iperf3KeyOnce.Do(func() {
		iperf3Key, iperf3KeyErr = rsa.GenerateKey(rand.Reader, 2048)
	})
	return iperf3Key, iperf3KeyErr
}

// permitKeyWindow is how long iperf's server takes keyed clients after
// it starts (--permit-key-timeout): the client connects right after the
// agent says the server runs, retrying for 5 s, so 10 s is ample; after
// it the server takes nobody new and exits once its client is done. The
// window replaces a connection count (-P): iperf counts a stranger's
// connect-and-close as one of those, which would let a stranger end the
// server under the client.
const permitKeyWindow = "10"

// authDirPrefix names the directories of iperf3 servers' credentials:
// authDirPrefix, the PID of the agent that made it, "-", a random suffix
// (CleanStale reads the PID back).
const authDirPrefix = "linerate-iperf3-auth-p"

// serverAuth prepares the files an authenticated tool server reads, in a
// directory of its own, and returns the server's extra arguments, what
// the client gets, and the directory to remove after. The directory is
// this process's (mode 0750, group id.GID), the files the server's user's
// (mode 0400): the server reads them as that user, and only this process
// removes them.
func serverAuth(tool string, c toolCreds, id Identity) (args []string, auth json.RawMessage, dir string, err error) {
	switch tool {
	case "iperf":
		return []string{"--permit-key=" + c.permitKey, "--permit-key-timeout", permitKeyWindow}, nil, "", nil
	case "iperf3":
	default:
		return nil, nil, "", nil
	}
	key, err := agentRSAKey()
	if err != nil {
		return nil, nil, "", fmt.Errorf("making an RSA key for iperf3: %w", err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, "", err
	}
	dir, err = os.MkdirTemp("", authDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, nil, "", fmt.Errorf("making iperf3's credentials: %w", err)
	}
	keyPath, usersPath := filepath.Join(dir, "private.pem"), filepath.Join(dir, "users.csv")
	err = errors.Join(
		writeOwned(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}), id),
		writeOwned(usersPath, []byte(c.authorizedUser()), id))
	if err == nil && id.Switch {
		err = errors.Join(os.Chown(dir, os.Geteuid(), int(id.GID)), os.Chmod(dir, 0o750))
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, "", fmt.Errorf("writing iperf3's credentials: %w", err)
	}
	auth, err = json.Marshal(toolAuth{RSAPublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, "", err
	}
	return []string{"--rsa-private-key-path", keyPath, "--authorized-users-path", usersPath}, auth, dir, nil
}

// writeOwned writes a new file readable by id's user only.
func writeOwned(path string, b []byte, id Identity) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && id.Switch {
		err = f.Chown(int(id.UID), int(id.GID))
	}
	return errors.Join(err, f.Close())
}

// redacted is argv, or a server's output, with the iperf permit key
// replaced: the client derives the key itself, so it never needs to read
// it, and the agent's log, tool_started and stored runs must not hold it.
func redacted(s string, c toolCreds) string {
	if c.permitKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.permitKey, "REDACTED")
}

// CleanStale removes the iperf3 credential directories of agents of this
// user that are gone (killed before they could remove them): directories
// of this process's user only, not links, whose agent's PID no longer
// runs. It returns how many it removed.
func CleanStale() (int, error) {
	tmp := os.TempDir()
	ents, err := os.ReadDir(tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // no temporary directory (a distroless image): nothing left in it
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", tmp, err)
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), authDirPrefix)
		if !ok {
			continue
		}
		spid, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(spid)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
			continue
		}
		if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
			continue // that agent still runs (or the PID is another's now: left alone)
		}
		if os.RemoveAll(path) == nil {
			n++
		}
	}
	return n, nil
}

// ClientAuth is what a tool's client needs to use a server the agent
// started for it: arguments after its own, environment variables, and a
// directory to remove when the run ends (Close). The zero value is a
// client of a server without credentials.
type ClientAuth struct {
	args, env []string
	dir       string
}

// ClientAuthFor prepares a client of tool for the agent's server.
func ClientAuthFor(tool string, secret []byte, auth json.RawMessage) (ClientAuth, error) {
	if tool != "iperf3" && tool != "iperf" {
		return ClientAuth{}, nil
	}
	c, err := credsFrom(secret)
	if err != nil {
		return ClientAuth{}, err
	}
	if tool == "iperf" {
		return ClientAuth{args: []string{"--permit-key=" + c.permitKey}}, nil
	}
	var a toolAuth
	if err := json.Unmarshal(auth, &a); err != nil || a.RSAPublicKey == "" {
		return ClientAuth{}, errors.New("the agent sent no public key for its iperf3 server (an agent of another version?)")
	}
	if b, _ := pem.Decode([]byte(a.RSAPublicKey)); b == nil || b.Type != "PUBLIC KEY" {
		return ClientAuth{}, errors.New("the agent's public key for iperf3 is not a PEM public key")
	}
	dir, err := os.MkdirTemp("", "linerate-iperf3-client-")
	if err != nil {
		return ClientAuth{}, err
	}
	path := filepath.Join(dir, "public.pem")
	if err := os.WriteFile(path, []byte(a.RSAPublicKey), 0o600); err != nil {
		os.RemoveAll(dir)
		return ClientAuth{}, err
	}
	return ClientAuth{args: []string{"--username", c.user, "--rsa-public-key-path", path},
		env: []string{"IPERF3_PASSWORD=" + c.password}, dir: dir}, nil
}

// Command is the client's command: args, then the credentials'
// arguments, with the credentials' environment added to this process's
// without its tokens (Environ).
func (a ClientAuth) Command(ctx context.Context, args []string) *exec.Cmd {
	full := append(slices.Clip(args), a.args...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = append(Environ(), a.env...)
	return cmd
}

// Close removes what the credentials left on disk.
func (a ClientAuth) Close() error {
	if a.dir == "" {
		return nil
	}
	return os.RemoveAll(a.dir)
}

// Command is the command of a tool's client that needs no credentials:
// args, with this process's environment without its tokens (Environ).
func Command(ctx context.Context, args []string) *exec.Cmd {
	return ClientAuth{}.Command(ctx, args)
}
