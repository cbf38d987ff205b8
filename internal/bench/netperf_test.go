package bench

import (
	"strings"
	"testing"
)

// TestParseNetperf reads netperf's omni output in its three forms,
// captured in the lab from netperf 2.7.1 built from source, and the 2.7.0
// output quoted in the project's feasibility notes (testdata/README.md).
// netperf's figures are whole round trips in µs, taken as printed.
func TestParseNetperf(t *testing.T) {
	for _, c := range []struct {
		file, form, test string
		selectors        []string
		want             rtt
		rate             float64 // 0: not selected
		fields           map[string]string
	}{
		{file: "netperf-2.7.1-tcp_rr-O.txt", form: "columns", test: "TCP_RR",
			want: rtt{21, null, null, null, 171, null, null, 4552, 103.10, null}},
		{file: "netperf-2.7.1-tcp_rr-O-more.txt", form: "columns", test: "TCP_RR",
			want: rtt{28, null, 98, 126, 158, null, null, 4041, 101.56, 45.03}, rate: 9824.286},
		{file: "netperf-2.7.1-udp_rr-O.txt", form: "columns", test: "UDP_RR",
			want: rtt{37, null, null, null, 4003, null, null, 8358, 182.36, null}},
		{file: "netperf-2.7.1-tcp_rr-o.csv", form: "csv", test: "TCP_RR",
			want: rtt{28, null, 96, 128, 182, null, null, 4661, 103.97, 77.67}, rate: 9596.970,
			fields: map[string]string{"P90_LATENCY": "128"}},
		{file: "netperf-2.7.1-tcp_rr-P0-o.csv", form: "csv", test: "",
			selectors: []string{"min_latency", "mean_latency", "p99_latency", "max_latency"},
			want:      rtt{32, null, null, null, 3590, null, null, 8200, 149.65, null}},
		{file: "netperf-2.7.1-tcp_rr-k.txt", form: "keyval", test: "TCP_RR",
			want: rtt{28, null, 95, 132, 825, null, null, 7663, 122.10, 222.65}, rate: 8174.978},
		// Lines without their trailing blanks, as the notes quote them.
		{file: "netperf-2.7.0-feasibility-tcp_rr-O.txt", form: "columns", test: "TCP_RR",
			want: rtt{4, null, null, null, 192, null, null, 4884, 64.57, null}},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseNetperf(readTestdata(t, c.file), c.selectors)
			if err != nil {
				t.Fatal(err)
			}
			if r.Form != c.form || r.Test != c.test {
				t.Errorf("form %q test %q, want %q %q", r.Form, r.Test, c.form, c.test)
			}
			checkRTT(t, r.Latency.RTTUs, c.want)
			switch {
			case c.rate == 0 && r.TransactionRate != nil:
				t.Errorf("transaction rate %v, not selected", *r.TransactionRate)
			case c.rate != 0 && (r.TransactionRate == nil || *r.TransactionRate != c.rate):
				t.Errorf("transaction rate %v, want %v", r.TransactionRate, c.rate)
			}
			for k, v := range c.fields {
				if r.Fields[k] != v {
					t.Errorf("field %s = %q, want %q (fields %v)", k, r.Fields[k], v, r.Fields)
				}
			}
			if r.Latency.Samples != 0 || len(r.Latency.Notes) == 0 {
				t.Errorf("samples %d notes %q: netperf gives no count and the note must say how its figures differ", r.Latency.Samples, r.Latency.Notes)
			}
		})
	}
}

func TestParseNetperfFailures(t *testing.T) {
	for _, c := range []struct {
		name, out string
		selectors []string
		want      string
	}{
		{"refused", string(readTestdata(t, "netperf-2.7.1-tcp_rr-refused.txt")), nil,
			"establish control: are you sure there is a netserver listening on 198.18.0.2 at port 12999?"},
		{"no titles", string(readTestdata(t, "netperf-2.7.1-tcp_rr-P0-o.csv")), nil, "without titles (-P 0)"},
		{"selectors do not fit", string(readTestdata(t, "netperf-2.7.1-tcp_rr-P0-o.csv")), []string{"min_latency"}, "4 values under 1 titles"},
		{"no latency selected", "Throughput,Throughput Units\n9000.10,10^6bits/s\n", nil, "netperf printed no latency"},
		{"garbage value", "MIN_LATENCY=fast\n", nil, `MIN_LATENCY is "fast"`},
		{"empty", "\n\n", nil, "no results in netperf's output"},
		{"sockperf's output", string(readTestdata(t, "sockperf-3.7-pp-udp.txt")), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNetperf([]byte(c.out), c.selectors)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParseNetperf(f *testing.F) {
	seedFiles(f, "netperf-")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, sel := range [][]string{nil, {"min_latency", "mean_latency", "p99_latency", "max_latency"}} {
			r, err := ParseNetperf(b, sel)
			if err != nil {
				continue
			}
			l := r.Latency.RTTUs
			for _, v := range []*float64{l.Min, l.Max, l.Mean, l.Stdev, l.P50, l.P90, l.P99, r.TransactionRate} {
				if v != nil {
					finite(t, "netperf figure", *v)
				}
			}
		}
	})
}
