package launch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// localSSH is an SSH launcher whose "ssh" runs the remote command with the
// local sh, as sshd would run it on the host: Install's remote scripts run
// for real, on this machine's file system.
func localSSH(t *testing.T, dir string) *SSH {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "ssh")
	script := "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift 2\nexec sh -c \"$1\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &SSH{Command: fake, Dir: dir}
}

// TestInstallChecksHash: a binary already at the install path counts only
// when its SHA-256 is the local binary's and it and its directory are the
// user's own; a file planted or changed under the name is replaced
// (Install used to answer "present" for any executable file there).
func TestInstallChecksHash(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "remote")
	l := localSSH(t, remote)
	bin := filepath.Join(t.TempDir(), "linerate")
	want := []byte("#!/bin/sh\necho the real linerate\n")
	os.WriteFile(bin, want, 0o755)
	ctx := context.Background()
	install := func(wantCopied bool) string {
		t.Helper()
		path, copied, err := l.Install(ctx, "host", bin)
		if err != nil {
			t.Fatal(err)
		}
		if copied != wantCopied {
			t.Errorf("copied %v, want %v", copied, wantCopied)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Errorf("%s holds %q", path, got)
		}
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v", path, fi.Mode(), err)
		}
		return path
	}
	path := install(true)
	install(false)
	// Planted under the name: same name, executable, other bytes.
	os.WriteFile(path, []byte("#!/bin/sh\necho planted\n"), 0o755)
	install(true)
	// A link to another executable in its place.
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, want, 0o755)
	os.Remove(path)
	os.Symlink(other, path)
	install(true)
	// Writable by others: made private again, and the hash still decides.
	os.Chmod(path, 0o777)
	os.Chmod(remote, 0o777)
	install(false)
	if fi, _ := os.Stat(remote); fi.Mode().Perm() != 0o700 {
		t.Errorf("the directory is left %v", fi.Mode().Perm())
	}
	// A directory that is a link: refused, nothing written through it.
	elsewhere := t.TempDir()
	linked := filepath.Join(t.TempDir(), "linked")
	os.Symlink(elsewhere, linked)
	if _, _, err := localSSH(t, linked).Install(ctx, "host", bin); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
		t.Errorf("install into a linked directory: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	// Another user's directory (root can make one).
	if os.Geteuid() == 0 {
		theirs := filepath.Join(t.TempDir(), "theirs")
		os.Mkdir(theirs, 0o755)
		os.Chown(theirs, 4242, 4242)
		if _, _, err := localSSH(t, theirs).Install(ctx, "host", bin); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
			t.Errorf("install into uid 4242's directory: %v", err)
		}
	}
}
