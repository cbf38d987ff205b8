package bench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedFiles adds every testdata file whose name starts with prefix.
func seedFiles(f *testing.F, prefix string) {
	names, err := filepath.Glob(filepath.Join("testdata", prefix+"*"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds %s*: %v", prefix, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func finite(t *testing.T, what string, xs ...float64) {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			t.Fatalf("%s: %v", what, x)
		}
	}
}

func FuzzParseIperf3(f *testing.F) {
	seedFiles(f, "iperf3-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseIperf3(b)
		if err == nil {
			finite(t, "goodput", r.Gbps(), r.End.CPU.ClientSeconds, r.End.CPU.ServerSeconds)
			if len(r.Intervals) == 0 || r.Start.Streams == 0 {
				t.Fatal("accepted a run without intervals or streams")
			}
		}
		if _, err := ParseIperf3Stream(bytes.NewReader(b), nil); err == nil && !bytes.Contains(b, []byte(`"end"`)) {
			t.Fatal("stream accepted without an end event")
		}
	})
}

func FuzzParseIperf2CSV(f *testing.F) {
	seedFiles(f, "iperf2-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseIperf2CSV(bytes.NewReader(b))
		if err != nil {
			return
		}
		if r.Start.Streams < 1 || len(r.Intervals) == 0 {
			t.Fatalf("accepted %d streams, %d intervals", r.Start.Streams, len(r.Intervals))
		}
		finite(t, "interval", r.Start.DurationS, r.End.Seconds)
		for _, iv := range r.Intervals {
			if iv.End < iv.Start {
				t.Fatalf("interval %v-%v", iv.Start, iv.End)
			}
		}
	})
}

func FuzzParsePerftest(f *testing.F) {
	seedFiles(f, "perftest-")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParsePerftest(b)
		if err != nil {
			return
		}
		for _, p := range []*float64{r.BWPeakGbps, r.BWAverageGbps, r.MsgRateMpps, r.TMinUs, r.TTypicalUs, r.TAvgUs, r.P99Us, r.P999Us} {
			if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
				t.Fatalf("non-finite value in %+v", r)
			}
		}
		if strings.TrimSpace(string(b)) == "" {
			t.Fatal("empty output accepted")
		}
	})
}
