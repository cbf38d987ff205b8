package hostfs

import (
	"maps"
	"slices"
	"sync"
)

// Recorder collects what an FS read: file contents (as read, so a replay
// sees the same values), directories listed and symbolic links followed.
// `linerate snapshot` writes it out as an archive.
type Recorder struct {
	mu    sync.Mutex
	files map[string][]byte
	dirs  map[string]bool
	links map[string]string
}

// Entry is one recorded item. Exactly one of the kinds applies: a Link
// target, a Dir, or a regular file's Data.
type Entry struct {
	Path string // root-relative, canonical for files and dirs
	Data []byte
	Dir  bool
	Link string
}

// Record makes the FS record every later read and returns the recorder.
func (fs *FS) Record() *Recorder {
	fs.rec = &Recorder{files: map[string][]byte{}, dirs: map[string]bool{}, links: map[string]string{}}
	return fs.rec
}

func (r *Recorder) file(p string, data []byte) {
	r.mu.Lock()
	r.files[p] = slices.Clone(data)
	r.mu.Unlock()
}

// placeholder records that a file exists without its contents, unless
// its contents were already recorded.
func (r *Recorder) placeholder(p string) {
	r.mu.Lock()
	if _, ok := r.files[p]; !ok {
		r.files[p] = nil
	}
	r.mu.Unlock()
}

func (r *Recorder) dir(p string) {
	r.mu.Lock()
	r.dirs[p] = true
	r.mu.Unlock()
}

func (r *Recorder) link(p, target string) {
	r.mu.Lock()
	r.links[p] = target
	r.mu.Unlock()
}

// Add records a file with the given contents, for facts gathered live by
// other means (netlink, ethtool) that a replay must find as a file.
func (r *Recorder) Add(p string, data []byte) { r.file(clean(p), data) }

// Entries returns everything recorded, sorted by path, directories first
// where a path is both a listed directory and a parent of files.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	for _, p := range slices.Sorted(maps.Keys(r.dirs)) {
		out = append(out, Entry{Path: p, Dir: true})
	}
	for _, p := range slices.Sorted(maps.Keys(r.links)) {
		out = append(out, Entry{Path: p, Link: r.links[p]})
	}
	for _, p := range slices.Sorted(maps.Keys(r.files)) {
		out = append(out, Entry{Path: p, Data: r.files[p]})
	}
	return out
}
