package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDocument reads arbitrary bytes as a stored run document (a
// database or a file may hold anything): no panic, and a document read
// once is written the same way after another round trip.
func FuzzDocument(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(capturedDir, "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"start": {"timestamp": "2026-11-20T10:00:00Z"}, "intervals": [{"streams": [{"sender": "server"}]}], "end": {"streams": [{"sender": "client"}]}}`))
	f.Add([]byte(`{"start": {"direction": "bidir"}, "intervals": [{"sum_all": {"bytes": 3}}], "end": {"sum_sent_all": {"bytes": 1}, "sum_received_all": {"bytes": 2}}}`))
	f.Add([]byte(`{"start": {"protocol": "udp"}, "end": {"sum": {"packets": -1}, "streams": [{"udp": {}}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Result
		if json.Unmarshal(b, &r) != nil {
			return
		}
		once, err := json.Marshal(r)
		if err != nil {
			return // e.g. a time outside JSON's years
		}
		var back Result
		if err := json.Unmarshal(once, &back); err != nil {
			t.Fatalf("a written document does not read back: %v\n%s", err, once)
		}
		twice, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the document:\n%s\n%s", once, twice)
		}
	})
}
