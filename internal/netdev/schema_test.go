package netdev

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/testbin"
)

func liveSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "schema", "live-facts.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, what string, b []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestSchema: the captured facts, the hand-written ones and the old form
// match docs/schema/live-facts.schema.json, and so does what Query reads
// of this machine's namespace; a field the schema does not know fails.
func TestSchema(t *testing.T) {
	sch := liveSchema(t)
	for _, name := range []string{"live-shapers.json", "live-fq-cake.json", "live-legacy.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		validate(t, sch, name, b)
	}
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"links":{"x":{"kind":"veth","qdiscs":[{"kind":"tbf","handle":"1:","parent":"root","burst":1}]}}}`)))
	if sch.Validate(doc) == nil {
		t.Error("an undocumented field passed")
	}
	testbin.NeedRoot(t, "rtnetlink's qdisc dump")
	f, err := Query()
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	validate(t, sch, "this machine", b)
}
