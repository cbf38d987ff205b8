package launchtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
)

// SSHCluster is one sshd per lab host, reachable from the lab's switch
// with the client config in Config.
type SSHCluster struct {
	// Config is an ssh_config for `ssh -F`: one Host alias per lab host
	// (h01, …) with its address, root, the client key and a known_hosts
	// file holding the hosts' key, checked strictly.
	Config string
	// Dir holds the keys, configs and logs.
	Dir string
}

// StartSSHD generates a host key and a client key and starts sshd in every
// host of members, listening on its lab address; the daemons stop in the
// cleanup. It creates /run/sshd if it is missing (sshd's privilege
// separation directory) and removes it again afterwards.
func StartSSHD(t testing.TB, name string, members []lab.Member) *SSHCluster {
	t.Helper()
	NeedTools(t, "openssh-server openssh-client", "sshd", "ssh", "ssh-keygen")
	sshd, _ := exec.LookPath("sshd")
	dir := privateDir(t, "linerate-sshd-")
	for _, k := range []string{"host_ed25519", "client_ed25519"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "linerate-test", "-f", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client_ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "authorized_keys"), string(pub), 0o600)
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	hostKey := strings.Join(strings.Fields(string(hostPub))[:2], " ")
	if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	var client, known strings.Builder
	for _, m := range members {
		cfg := filepath.Join(dir, "sshd_config."+string(m.Host))
		// UsePAM no: no PAM session outside systemd. StrictModes no: the
		// keys live under /tmp, which StrictModes refuses.
		write(t, cfg, fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel VERBOSE
`, m.Address, filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "authorized_keys")), 0o600)
		if out, err := exec.Command(sshd, "-t", "-f", cfg).CombinedOutput(); err != nil {
			t.Fatalf("sshd -t -f %s: %v: %s", cfg, err, out)
		}
		daemon(t, name, m.Host, filepath.Join(dir, "sshd."+string(m.Host)+".log"),
			exec.Command(sshd, "-D", "-e", "-f", cfg))
		fmt.Fprintf(&client, "Host %s\n  HostName %s\n", m.Host, m.Address)
		fmt.Fprintf(&known, "%s %s\n", m.Address, hostKey)
	}
	write(t, filepath.Join(dir, "known_hosts"), known.String(), 0o600)
	fmt.Fprintf(&client, `Host *
  User root
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  ConnectTimeout 5
`, filepath.Join(dir, "client_ed25519"), filepath.Join(dir, "known_hosts"))
	c := &SSHCluster{Config: filepath.Join(dir, "ssh_config"), Dir: dir}
	write(t, c.Config, client.String(), 0o600)
	// Ready when every sshd answers from the switch with the host key.
	for _, m := range members {
		err := poll(5*time.Second, func() error {
			out, err := output(name, lab.Switch, exec.Command("ssh-keyscan", "-T", "1", "-t", "ed25519", m.Address))
			if err == nil && !strings.Contains(out, hostKey) {
				err = fmt.Errorf("ssh-keyscan %s: %q, not the host key", m.Address, out)
			}
			return err
		})
		if err != nil {
			t.Fatalf("sshd in %s does not answer: %v (log %s)", m.Host, err, filepath.Join(dir, "sshd."+string(m.Host)+".log"))
		}
	}
	return c
}

func write(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
