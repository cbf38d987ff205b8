package ethtool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/sff"
)

// schemas compiles docs/schema/ethtool-*.schema.json by file name.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, name := range []string{FileLinkModes, FileLinkState, FileFEC, FileStats, FileChannels, FileRings, FileNotRead} {
		sch, err := c.Compile(filepath.Join("..", "..", "docs", "schema", "ethtool-"+strings.TrimSuffix(name, ".json")+".schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = sch
	}
	return out
}

// validateFiles checks each JSON file of a facts directory against its
// schema, and each module page name against the layout.
func validateFiles(where string, files map[string][]byte, sch map[string]*jsonschema.Schema) []error {
	var errs []error
	for name, b := range files {
		if stem, ok := strings.CutPrefix(name, DirModule+"/"); ok {
			if stem == FileModuleErr {
				continue
			}
			if _, err := sff.ParsePageName(strings.TrimSuffix(stem, ".bin")); err != nil || !strings.HasSuffix(stem, ".bin") || len(b) > 128 {
				errs = append(errs, fmt.Errorf("%s: %s is not a module page of at most 128 bytes: %v", where, name, err))
			}
			continue
		}
		s, ok := sch[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s is not a documented file", where, name))
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %v", where, name, err))
			continue
		}
		if err := s.Validate(doc); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %v", where, name, err))
		}
	}
	return errs
}

// TestSchemas validates the facts files of every committed host tree and
// of facts collected through the fake kernel against docs/schema/.
func TestSchemas(t *testing.T) {
	sch := schemas(t)
	k := &fakeKernel{t: t, pages: testModule()}
	c := k.dial()
	f := Collect(c, "eth9")
	c.Close()
	files, err := f.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range validateFiles("fake eth9", files, sch) {
		t.Error(err)
	}

	trees, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hosts", "*", "linerate", "ethtool", "*"))
	if len(trees) < 12 {
		t.Fatalf("only %d interfaces with ethtool facts under testdata/hosts", len(trees))
	}
	for _, dir := range trees {
		files := map[string][]byte{}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files[filepath.ToSlash(rel)] = b
			return nil
		})
		for _, err := range validateFiles(dir, files, sch) {
			t.Error(err)
		}
	}
	// A file that breaks its schema is caught.
	bad := map[string][]byte{FileFEC: []byte(`{"configured": ["fast"], "auto": false, "active": "RS", "stats": null}`)}
	if errs := validateFiles("bad", bad, sch); len(errs) != 1 {
		t.Errorf(`fec.json with configured ["fast"]: %v, want one schema error`, errs)
	}
}
