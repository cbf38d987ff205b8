// Package jsonshape compares the shapes of two JSON documents: which key
// paths one has that the other lacks, or holds with another JSON type. It
// is how linerate checks that its run document is a superset of another
// tool's (iperf3's -J document).
package jsonshape

import (
	"fmt"
	"sort"
)

// Kind is the JSON type of a decoded value: "object", "array", "string",
// "number", "bool" or "null".
func Kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64, int, int64, uint64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// Missing returns, sorted, every key path of ref (decoded with
// encoding/json into any) that doc lacks or holds with another JSON type,
// as "start.timestamp: object, have string". Arrays compare by element
// shape: each element of doc's array must have the paths of every element
// of ref's (their union), written "intervals[].sum.bytes"; an empty array
// in doc where ref's has elements counts as missing them. A null in ref
// matches any type: iperf3 writes null where it has no value.
func Missing(ref, doc any) []string {
	var out []string
	walk("", ref, doc, &out)
	sort.Strings(out)
	return out
}

func walk(path string, ref, doc any, out *[]string) {
	if ref == nil {
		return
	}
	if rk, dk := Kind(ref), Kind(doc); rk != dk {
		*out = append(*out, fmt.Sprintf("%s: %s, have %s", name(path), rk, dk))
		return
	}
	switch r := ref.(type) {
	case map[string]any:
		d := doc.(map[string]any)
		for k, rv := range r {
			p := join(path, k)
			dv, ok := d[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s: %s, missing", p, Kind(rv)))
				continue
			}
			walk(p, rv, dv, out)
		}
	case []any:
		d := doc.([]any)
		if len(r) == 0 {
			return
		}
		union := merge(r)
		if len(d) == 0 {
			*out = append(*out, fmt.Sprintf("%s[]: %d elements, have none", name(path), len(r)))
			return
		}
		seen := map[string]bool{}
		for _, dv := range d {
			var sub []string
			walk(path+"[]", union, dv, &sub)
			for _, s := range sub {
				if !seen[s] {
					seen[s] = true
					*out = append(*out, s)
				}
			}
		}
	}
}

// merge is the union of the shapes of an array's elements: objects merge
// key by key, the first non-null value of other kinds stands for all.
func merge(vs []any) any {
	var u any
	for _, v := range vs {
		u = union(u, v)
	}
	return u
}

func union(a, b any) any {
	if a == nil {
		return b
	}
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		if al, ok := a.([]any); ok {
			if bl, ok := b.([]any); ok {
				return []any{merge(append(append([]any{}, al...), bl...))}
			}
		}
		return a
	}
	m := make(map[string]any, len(am))
	for k, v := range am {
		m[k] = v
	}
	for k, v := range bm {
		m[k] = union(m[k], v)
	}
	return m
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func name(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}
