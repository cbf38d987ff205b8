package dcb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSchema validates what Files writes, and every ieee.json of the
// committed trees, against docs/schema/dcb-ieee.schema.json; and checks
// that the schema refuses what Parse refuses.
func TestSchema(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "schema", "dcb-ieee.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(where string, b []byte) error {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
		return sch.Validate(doc)
	}
	docs := map[string][]byte{}
	for name, c := range map[string]*IEEE{"roce": roceHost(), "empty": {App: []App{}, Trust: []string{}}, "none": {}} {
		files, err := Files(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = files[FileIEEE]
	}
	trees, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hosts", "*", "linerate", "dcb", "*", FileIEEE))
	if len(trees) < 11 {
		t.Errorf("only %d trees hold DCB facts", len(trees))
	}
	for _, p := range trees {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = b
	}
	for where, b := range docs {
		if err := validate(where, b); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		if _, err := Parse(b); err != nil {
			t.Errorf("%s: Parse: %v", where, err)
		}
	}
	for name, doc := range map[string]string{
		"unknown key":  `{"colour":1}`,
		"prio 8":       `{"pfc":{"enabled":[8],"requests":[0,0,0,0,0,0,0,0],"indications":[0,0,0,0,0,0,0,0]}}`,
		"bad selector": `{"app":[{"selector":"vlan","protocol":1,"priority":3}]}`,
		"bad dcbx":     `{"dcbx":"switch"}`,
	} {
		if err := validate(name, []byte(doc)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: Parse accepts it", name)
		}
	}
}
