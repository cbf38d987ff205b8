package metrics

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Encode writes g's metrics in the Prometheus text format (0.0.4), with
// no sample timestamps: node_exporter's textfile collector skips a file
// that has any.
func Encode(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gathering metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encoding %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// WriteTextfile writes g's metrics to path for node_exporter's textfile
// collector, atomically: into a temporary file in the same directory
// (named so that the collector, which reads *.prom, never reads it
// half-written), flushed to disk, then renamed over path, and the
// directory flushed too. A crash leaves the old file or the new one,
// never a part. path "-" writes to stdout instead.
//
// Hand-written rather than prometheus.WriteToTextfile, which neither
// flushes the file before the rename nor keeps its temporary name out of
// *.prom.
func WriteTextfile(path string, g prometheus.Gatherer, stdout io.Writer) error {
	var buf bytes.Buffer
	if err := Encode(&buf, g); err != nil {
		return err
	}
	if path == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--prom %s is a directory: name a file in it, e.g. %s", path, filepath.Join(path, "linerate.prom"))
	}
	return writeAtomic(path, buf.Bytes())
}

// tempPattern names the temporary file beside path: hidden, and ending
// in .tmp, never .prom.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".*.tmp" }

// writeAtomic replaces path with data: temporary file, fsync, rename,
// fsync of the directory.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w (does the directory exist, and may this user write to it?)", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	// node_exporter often runs as another user: the file is world-readable
	// (it holds no secret), as prometheus.WriteToTextfile makes it.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("flushing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself; some filesystems refuse fsync on a directory
		d.Close()
	}
	return nil
}
