package agent

import "testing"

// TestProbeNote: the start note says the rate as a person wrote it
// (-b 500M is "500 Mbit/s", not "5e+08 bit/s"), and a round-trip rate
// in plain digits.
func TestProbeNote(t *testing.T) {
	tests := []struct {
		m    probeMsg
		want string
	}{
		{probeMsg{Kind: ProbeUDP, Size: 1460, Rate: 5e8}, "UDP stream: 1460-byte datagrams at 500 Mbit/s"},
		{probeMsg{Kind: ProbeUDP, Size: 1460, Rate: 2.5e9}, "UDP stream: 1460-byte datagrams at 2.5 Gbit/s"},
		{probeMsg{Kind: ProbeUDP, Size: 64, Rate: 1e9}, "UDP stream: 64-byte datagrams at 1 Gbit/s"},
		{probeMsg{Kind: ProbeUDP, Size: 64, Rate: 64e3}, "UDP stream: 64-byte datagrams at 64 kbit/s"},
		{probeMsg{Kind: ProbeUDP, Size: 64, Rate: 999}, "UDP stream: 64-byte datagrams at 999 bit/s"},
		{probeMsg{Kind: ProbeUDP, Size: 64}, "UDP stream: 64-byte datagrams as fast as possible"},
		{probeMsg{Kind: ProbePingPong, Size: 64, Rate: 1e6, CooldownMS: 200},
			"ping-pong over TCP (TCP_NODELAY): 64-byte messages at 1000000 round trips/s, 200ms cool-down not counted"},
		{probeMsg{Kind: ProbePingPong, Size: 64, CooldownMS: 200},
			"ping-pong over TCP (TCP_NODELAY): 64-byte messages as fast as possible, 200ms cool-down not counted"},
		{probeMsg{Kind: ProbePingPong, UDP: true, Size: 32, Rate: 10000, CooldownMS: 200},
			"ping-pong over UDP: 32-byte messages at 10000 round trips/s, 200ms cool-down not counted"},
	}
	for _, tt := range tests {
		if got := probeNote(tt.m); got != tt.want {
			t.Errorf("probeNote(%+v) = %q, want %q", tt.m, got, tt.want)
		}
	}
}
