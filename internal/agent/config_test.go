package agent

import (
	"slices"
	"testing"
)

func TestParsePinning(t *testing.T) {
	tests := []struct {
		in           string
		client, serv []int
		bad          bool
	}{
		{in: "0,1", client: []int{0}, serv: []int{1}},
		{in: "0-3,4-7", client: []int{0, 1, 2, 3}, serv: []int{4, 5, 6, 7}},
		{in: "0,2/1,3", client: []int{0, 2}, serv: []int{1, 3}},
		{in: "6", client: []int{6}},
		{in: "/5", serv: []int{5}},
		{in: "0,1,2", bad: true},
		{in: "x,1", bad: true},
	}
	for _, tt := range tests {
		p, err := ParsePinning(tt.in)
		if tt.bad != (err != nil) || !slices.Equal(p.Client, tt.client) || !slices.Equal(p.Server, tt.serv) {
			t.Errorf("ParsePinning(%q) = %+v, %v", tt.in, p, err)
		}
		if err == nil {
			q, err := ParsePinning(p.String())
			if err != nil || !slices.Equal(q.Client, p.Client) || !slices.Equal(q.Server, p.Server) {
				t.Errorf("%q does not survive String: %q", tt.in, p.String())
			}
		}
	}
}
