package hosttree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// tree collects the files and symbolic links of a host before they are
// written, so that a path given twice with different content is caught and
// the output does not depend on the order of the calls.
type tree struct {
	files map[string][]byte
	links map[string]string
	errs  []error
	iommu map[string]int // IOMMU group of each PCI function, by address
}

func newTree() *tree {
	return &tree{files: make(map[string][]byte), links: make(map[string]string)}
}

// file adds a file; content is written as given.
func (t *tree) file(p string, content []byte) {
	if old, ok := t.files[p]; ok {
		if !bytes.Equal(old, content) {
			t.errs = append(t.errs, fmt.Errorf("%s: written twice with different content", p))
		}
		return
	}
	if _, ok := t.links[p]; ok {
		t.errs = append(t.errs, fmt.Errorf("%s: both a file and a link", p))
		return
	}
	t.files[p] = content
}

// attr adds a sysfs-style attribute: the value and a newline.
func (t *tree) attr(p, value string) {
	t.file(p, []byte(value+"\n"))
}

// link adds a symbolic link to a relative target.
func (t *tree) link(p, target string) {
	if old, ok := t.links[p]; ok {
		if old != target {
			t.errs = append(t.errs, fmt.Errorf("%s: linked to both %s and %s", p, old, target))
		}
		return
	}
	if _, ok := t.files[p]; ok {
		t.errs = append(t.errs, fmt.Errorf("%s: both a file and a link", p))
		return
	}
	t.links[p] = target
}

// check reports conflicts, and paths that are used both as a file or link
// and as a directory.
func (t *tree) check() error {
	errs := slices.Clone(t.errs)
	leaves := make(map[string]bool, len(t.files)+len(t.links))
	for p := range t.files {
		leaves[p] = true
	}
	for p := range t.links {
		leaves[p] = true
	}
	for p := range leaves {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			if leaves[d] {
				errs = append(errs, fmt.Errorf("%s: is a file or link but %s lies below it", d, p))
				break
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// write lays the tree out below root. Directories are made first, then
// files and links are written by a few goroutines (a large host has tens of
// thousands of small files). Existing files are never overwritten.
func (t *tree) write(root string) error {
	if err := t.check(); err != nil {
		return err
	}
	dirs := make(map[string]bool)
	addDirs := func(p string) {
		for d := filepath.Dir(p); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	paths := make([]string, 0, len(t.files)+len(t.links))
	for p := range t.files {
		addDirs(p)
		paths = append(paths, p)
	}
	for p := range t.links {
		addDirs(p)
		paths = append(paths, p)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("make host root: %w", err)
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	slices.Sort(sorted) // a parent sorts before its children
	for _, d := range sorted {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make directory: %w", err)
		}
	}
	slices.Sort(paths)

	workers := max(2, min(8, 2*runtime.NumCPU()))
	jobs := make(chan string, 256)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var first error
			for p := range jobs {
				if first != nil {
					continue // drain
				}
				first = t.writeOne(root, p)
			}
			errc <- first
		})
	}
	for _, p := range paths {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *tree) writeOne(root, p string) error {
	full := filepath.Join(root, p)
	if target, ok := t.links[p]; ok {
		if err := os.Symlink(target, full); err != nil {
			return fmt.Errorf("write link: %w", err)
		}
		return nil
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	if _, err := f.Write(t.files[p]); err != nil {
		f.Close()
		return fmt.Errorf("write file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	return nil
}
