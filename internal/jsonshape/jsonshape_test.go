package jsonshape

import (
	"encoding/json"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestMissing(t *testing.T) {
	for _, c := range []struct{ name, ref, doc, want string }{
		{"same", `{"a": 1, "b": {"c": "x"}}`, `{"a": 2, "b": {"c": "y"}}`, ""},
		{"superset", `{"a": 1}`, `{"a": 2, "z": true}`, ""},
		{"missing key", `{"a": 1, "b": {"c": "x"}}`, `{"a": 1, "b": {}}`, "b.c: string, missing"},
		{"other type", `{"start": {"timestamp": {"time": "x"}}}`, `{"start": {"timestamp": "2026"}}`, "start.timestamp: object, have string"},
		{"number as string", `{"a": 1}`, `{"a": "1"}`, "a: number, have string"},
		{"bool", `{"a": true}`, `{"a": 1}`, "a: bool, have number"},
		{"null matches any", `{"a": null}`, `{"a": 3}`, ""},
		{"array elements union", `{"s": [{"a": 1}, {"b": true}]}`, `{"s": [{"a": 1, "b": false}, {"a": 2}]}`, "s[].b: bool, missing"},
		{"empty doc array", `{"s": [{"a": 1}]}`, `{"s": []}`, "s[]: 1 elements, have none"},
		{"empty ref array", `{"s": []}`, `{"s": [1]}`, ""},
		{"nested arrays", `{"i": [{"s": [{"x": 1}]}]}`, `{"i": [{"s": [{"x": "1"}]}]}`, "i[].s[].x: number, have string"},
		{"whole document", `{}`, `[]`, "(document): object, have array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(Missing(decode(t, c.ref), decode(t, c.doc)), "; ")
			if got != c.want {
				t.Errorf("Missing = %q, want %q", got, c.want)
			}
		})
	}
}
