package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MarshalJSON writes the run's document (result.Result's, with iperf3's
// fields beside linerate's) and the fields Run adds. Without it the
// embedded Result's MarshalJSON would stand for Run's and drop them.
func (r Run) MarshalJSON() ([]byte, error) {
	doc, err := r.Result.MarshalJSON()
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(struct {
		Label    string          `json:"label,omitempty"`
		Tool     *Tool           `json:"tool,omitempty"`
		Perftest *PerftestResult `json:"perftest,omitempty"`
	}{r.Label, r.Tool, r.Perftest})
	if err != nil {
		return nil, err
	}
	return joinObjects(doc, extra)
}

// joinObjects puts the members of JSON object b after those of a.
func joinObjects(a, b []byte) ([]byte, error) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) < 2 || a[len(a)-1] != '}' || len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("joining JSON objects: not objects")
	}
	switch {
	case len(b) == 2: // {}
		return a, nil
	case len(a) == 2:
		return b, nil
	}
	out := append(a[:len(a)-1:len(a)-1], ',')
	return append(out, b[1:]...), nil
}
