package bench

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/toolserver"
)

// FuzzToolServerArgv feeds the agent's tool-server description decoder
// and its allowlist: whatever a client sends, the command line is one of
// the allowed tools with bounded arguments, and never carries the
// credentials' flags (only the agent adds those).
func FuzzToolServerArgv(f *testing.F) {
	for _, s := range []string{
		`{"tool":"iperf3","port":5201,"bind":"198.18.0.2","cpus":[1]}`,
		`{"tool":"iperf","port":5001}`,
		`{"tool":"ib_write_bw","streams":4,"perftest":{"device":"mlx5_0","gid":3,"size":65536,"iters":5000}}`,
		`{"tool":"sh","port":-1}`,
		`{"tool":"iperf3","bind":"--rsa-private-key-path","cpus":[70000]}`,
		`{"tool":"iperf3","extra":["--authorized-users-path","/etc/passwd"]}`,
		`{"tool":"ib_send_lat","perftest":{"device":"x;rm -rf /"}}`,
	} {
		f.Add([]byte(s))
	}
	allowed := append([]string{"iperf3", "iperf"}, toolserver.PerftestTools...)
	f.Fuzz(func(t *testing.T, spec []byte) {
		var ts toolserver.ToolServer
		if json.Unmarshal(spec, &ts) != nil {
			return
		}
		argv, err := ts.Argv()
		if err != nil {
			return
		}
		if !slices.Contains(allowed, argv[0]) {
			t.Fatalf("argv %q: not an allowed tool", argv)
		}
		if len(argv) > 32 {
			t.Fatalf("argv of %d arguments", len(argv))
		}
		for i, a := range argv {
			if strings.HasPrefix(a, "--rsa") || strings.HasPrefix(a, "--authorized") || strings.HasPrefix(a, "--permit") {
				t.Fatalf("a client set a credentials flag: %q", argv)
			}
			if i > 0 && (argv[i-1] == "-B") {
				if _, err := netip.ParseAddr(a); err != nil {
					t.Fatalf("bind %q is not an address", a)
				}
			}
			if i > 0 && argv[i-1] == "-p" {
				if p, err := strconv.Atoi(a); err != nil || p < 1 || p > 65535 {
					t.Fatalf("port %q", a)
				}
			}
		}
	})
}
