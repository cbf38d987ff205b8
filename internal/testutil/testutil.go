// Package testutil holds the helpers that tests of several packages share:
// copies of the committed host trees that a test may change, a record of a
// tree's every file to compare after a revert, a buffer a child process
// and the test may use at once, and the CPU time a piece of work took (a
// fuzz input's budget). It is linked into tests only.
// (Running linerate itself as a child, and tests that need root, are
// package testbin's.)
package testutil

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Scratch returns a new temporary directory, on tmpfs (/dev/shm) when
// there is one: tree copies hold thousands of files and tune's journals
// sync to disk, both slow on a busy machine's disk. It is removed when the
// test ends.
func Scratch(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("/dev/shm", "linerate-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// CopyTree copies the tree at src (a committed host tree, which is made of
// symbolic links as sysfs is) into a new Scratch directory, links as links,
// so that a test may change or damage it. It returns the copy's root,
// named as src's last element.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(Scratch(t), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TreeState records every file's bytes ("file:…"), every link's target
// ("link:…") and every directory ("dir") below root, by relative path.
func TreeState(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "link:" + target
			return err
		case d.IsDir():
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = "file:" + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Buffer is a bytes.Buffer that a writer (a command, a child process's
// output copier, a logger) and the test reading it may use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

// Schema compiles the JSON Schema at path (a docs/schema file, e.g.
// "../../docs/schema/bench-v1.schema.json" from a package two levels
// down) with formats asserted, its sibling schemas loaded under their
// $id so that a $ref between them resolves as a standard validator given
// the directory resolves it.
func Schema(t testing.TB, path string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	siblings, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range siblings {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if m, ok := doc.(map[string]any); ok {
			if id, ok := m["$id"].(string); ok {
				if err := c.AddResource(id, doc); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
			}
		}
	}
	sch, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// Validate checks the JSON document b against sch; what names it (a
// command, a file) heads the failure.
func Validate(t testing.TB, sch *jsonschema.Schema, what string, b []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s: not JSON: %v", what, err)
		return
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s does not match %s:\n%v", what, sch.Location, err)
	}
}

// KubernetesValidate runs kubernetes-validate --strict (PyPI) over the
// manifest files and returns what it printed; a failed validation fails
// t. Without the tool the test is skipped, except under CI=true, which
// installs it (.ci/run), where it fails.
func KubernetesValidate(t testing.TB, files ...string) []byte {
	t.Helper()
	kv, err := exec.LookPath("kubernetes-validate")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubernetes-validate is not installed (CI=true): pip install kubernetes-validate")
		}
		t.Skip("kubernetes-validate is not installed: pip install kubernetes-validate")
	}
	out, err := exec.Command(kv, append([]string{"--strict"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubernetes-validate --strict: %v\n%s", err, out)
	}
	return out
}
