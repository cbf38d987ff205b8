package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDoctorSchemaRoCE: the RoCE facts of doctor --json hold to
// docs/schema/doctor-v1.schema.json, and the schema refuses documents
// that break them (an active MTU that is no IB MTU, a distance nvidia-smi
// does not name, an ECN list short of eight priorities, no gpus).
func TestDoctorSchemaRoCE(t *testing.T) {
	sch := doctorSchema(t)
	out, stderr, code := runCLI(t, "doctor", "--json", "--root", hostTree("gpu-acs-redirect"))
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	validate := func(v any) error {
		b, _ := json.Marshal(v)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(doc)
	}
	fresh := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := validate(fresh()); err != nil {
		t.Fatalf("doctor's own output: %v", err)
	}
	nic := func(m map[string]any) map[string]any { return m["nics"].([]any)[0].(map[string]any) }
	for name, spoil := range map[string]func(m map[string]any){
		"active_mtu 3000": func(m map[string]any) { nic(m)["rdma"].([]any)[0].(map[string]any)["active_mtu"] = 3000 },
		"no gids":         func(m map[string]any) { delete(nic(m)["rdma"].([]any)[0].(map[string]any), "gids") },
		"distance FAR": func(m map[string]any) {
			m["gpus"].([]any)[0].(map[string]any)["nics"].([]any)[0].(map[string]any)["distance"] = "FAR"
		},
		"ecn of 7": func(m map[string]any) {
			nic(m)["ecn"].(map[string]any)["np"] = []any{true, true, true, true, true, true, true}
		},
		"no gpus": func(m map[string]any) { delete(m, "gpus") },
		"no dcb":  func(m map[string]any) { delete(nic(m), "dcb") },
		"priority 9 counters": func(m map[string]any) {
			nic(m)["priority_counters"].(map[string]any)["9"] = map[string]any{"rx_pause": 1}
		},
	} {
		m := fresh()
		spoil(m)
		if err := validate(m); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
