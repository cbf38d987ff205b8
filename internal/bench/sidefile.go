package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// WriteSideFile writes run r, as its linerate.bench/v1 document, into a new
// file beside the results database db ("results.db.run-20261123T163512.345Z.json")
// and returns the file's path. It is where a run goes when the database
// cannot take it, so that no finished measurement is lost to a damaged
// or full database: the file is the document `bench --json` prints.
func WriteSideFile(db string, r *result.Result) (string, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	at := r.Start.Timestamp
	if at.IsZero() {
		at = time.Now()
	}
	base := db + ".run-" + at.UTC().Format("20060102T150405.000Z")
	for n := 0; ; n++ {
		path := base + ".json"
		if n > 0 {
			path = fmt.Sprintf("%s-%d.json", base, n)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if os.IsExist(err) && n < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("writing the run beside the database: %w", err)
		}
		_, werr := f.Write(append(b, '\n'))
		if err := f.Sync(); werr == nil {
			werr = err
		}
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			os.Remove(path)
			return "", fmt.Errorf("writing %s: %w", path, werr)
		}
		return path, nil
	}
}
