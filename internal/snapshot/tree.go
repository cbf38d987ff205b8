package snapshot

import (
	"path"
	"strings"
)

// kind is what an archive path names.
type kind uint8

const (
	kindImplicitDir kind = iota + 1 // a parent that no entry names
	kindDir
	kindFile
	kindLink
)

// isDir reports whether k is a directory, named or implied.
func (k kind) isDir() bool { return k == kindDir || k == kindImplicitDir }

// tree is the shape of an archive as its entries arrive. It lets Open
// refuse an entry before anything of it reaches the disk, whatever the
// order of the entries, and lets Write refuse what Open would refuse.
type tree struct {
	kinds map[string]kind
	// max bounds the paths recorded, implied directories included: each
	// is a directory Open makes.
	max int
}

func newTree(max int) *tree { return &tree{kinds: map[string]kind{}, max: max} }

// add checks one entry against the rules and the entries added before it,
// and records it. Errors match ErrUnsafe.
//
// Every recorded path has its parents recorded too (as implied
// directories when no entry names them), so only the parents not yet
// recorded and the nearest recorded one need a look: a name costs work in
// proportion to its length and to the directories it adds, never to its
// depth times its length.
func (t *tree) add(name string, k kind, target string) error {
	if err := checkName(name); err != nil {
		return err
	}
	// No entry may lie below a link: extracting it would write wherever
	// the link points. Nor below a file, which cannot be a directory.
	var missing []string // parents no entry has named yet, deepest first
up:
	for p := parentOf(name); p != ""; p = parentOf(p) {
		switch t.kinds[p] {
		case 0:
			missing = append(missing, p)
		case kindLink:
			return unsafe("entry %s goes through the symbolic link %s", show(name), show(p))
		case kindFile:
			return unsafe("entry %s lies below the file %s", show(name), show(p))
		default:
			break up // a directory: its own parents were checked when it came
		}
	}
	old := t.kinds[name]
	switch {
	case old == 0, old == kindImplicitDir && k == kindDir:
	case old == kindImplicitDir && k == kindLink:
		// The entries below it were written as a directory already; as a
		// link it would redirect them.
		return unsafe("entry %s is a symbolic link but other entries lie below it", show(name))
	case old == kindImplicitDir:
		return unsafe("entry %s is a file but other entries lie below it", show(name))
	default:
		return unsafe("entry %s appears twice", show(name))
	}
	if k == kindLink {
		if err := checkTarget(name, target); err != nil {
			return err
		}
	}
	n := len(t.kinds) + len(missing)
	if old == 0 {
		n++
	}
	if t.max > 0 && n > t.max {
		return unsafe("the archive's entries, with the directories their names imply, are over the limit of %d", t.max)
	}
	for _, p := range missing {
		t.kinds[p] = kindImplicitDir
	}
	t.kinds[name] = k
	return nil
}

// parentOf is the directory holding name, "" at the top.
func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// checkName accepts only clean, relative, slash-separated names that stay
// below the root: exactly what Write produces.
func checkName(name string) error {
	switch {
	case name == "":
		return unsafe("entry with an empty name")
	case len(name) > MaxNameLen:
		return unsafe("entry %s has a name of %d bytes, over the limit of %d", show(name), len(name), MaxNameLen)
	case strings.Count(name, "/") >= MaxDepth:
		return unsafe("entry %s is %d directories deep, over the limit of %d", show(name), strings.Count(name, "/")+1, MaxDepth)
	case strings.IndexByte(name, 0) >= 0:
		return unsafe("entry %s holds a NUL byte", show(name))
	case strings.HasPrefix(name, "/"):
		return unsafe("entry %s is an absolute path", show(name))
	}
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." {
			return unsafe("entry %s leaves the archive root", show(name))
		}
	}
	if name == "." || path.Clean(name) != name {
		return unsafe("entry %s is not a clean path", show(name))
	}
	return nil
}

// checkTarget accepts a link target only if it is relative, clean and,
// read from the link's directory, does not climb above the root.
//
// That check is enough even though the kernel resolves ".." physically,
// through the links on the way: a clean path has ".." only at its start,
// the link's directory holds no link on its way (tree.add sees to that),
// so the climb happens through real directories, and every name after it
// only descends, into directories or into links that are themselves
// checked this way. sysfs writes its links in exactly this form
// ("../../devices/pci0000:00/…"), and procfs's are plain names ("1234").
// Absolute targets are refused rather than read as root-relative: other
// readers of the extracted tree (prometheus/procfs) would follow them to
// the machine's own /sys.
func checkTarget(name, target string) error {
	switch {
	case target == "":
		return unsafe("link %s has an empty target", show(name))
	case len(target) > MaxNameLen:
		return unsafe("link %s has a target of %d bytes, over the limit of %d", show(name), len(target), MaxNameLen)
	case strings.IndexByte(target, 0) >= 0:
		return unsafe("link %s has a target holding a NUL byte", show(name))
	case strings.HasPrefix(target, "/"):
		return unsafe("link %s -> %s points outside the archive root (absolute target)", show(name), show(target))
	case path.Clean(target) != target:
		return unsafe("link %s -> %s is not a clean relative target", show(name), show(target))
	}
	up := 0
	for c := range strings.SplitSeq(target, "/") {
		if c != ".." {
			break
		}
		up++
	}
	if up > strings.Count(name, "/") {
		return unsafe("link %s -> %s leaves the archive root", show(name), show(target))
	}
	return nil
}
