package fleet

import (
	"os"
	"strings"
	"testing"
)

func TestParseHostsFile(t *testing.T) {
	f, err := os.Open("testdata/hosts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hosts, err := ParseHosts("hosts.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "node01", Address: "10.10.0.1", SSH: "root@node01-mgmt"},
		{Name: "node02", Address: "10.10.0.2", SSH: "root@node02-mgmt"},
		{Name: "node03", Address: "10.10.0.3"},
		{Name: "node04", Address: "node04-data.example.net", SSH: "ssh-alias-node04"},
		{Name: "node05", Address: "fd00::5"},
	}
	if len(hosts) != len(want) {
		t.Fatalf("%d hosts: %+v", len(hosts), hosts)
	}
	for i := range want {
		if hosts[i] != want[i] {
			t.Errorf("host %d: %+v, want %+v", i, hosts[i], want[i])
		}
	}
}

// TestParseHostsErrors: each bad list gives one line naming the file and
// the line.
func TestParseHostsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a 10.0.0.1\nb\n", "f:2: 1 fields"},
		{"a 10.0.0.1\nb 10.0.0.2 x y\n", "f:2: 4 fields"},
		{"a 10.0.0.1\na 10.0.0.2\n", "f:2: host a is already on line 1"},
		{"a 10.0.0.1\n\n# c\nb 10.0.0.1\n", "f:4: address 10.0.0.1 is already on line 1"},
		{"a 10.0.0.1\n-b 10.0.0.2\n", "f:2: host name \"-b\""},
		{"a 10.0.0.1\nb 10.0.0.2 -oProxyCommand=evil\n", "f:2: ssh target \"-oProxyCommand=evil\" starts with '-'"},
		{"a 10.0.0.1\nb 10.0.0.2 root@x;reboot\n", "f:2: ssh target"},
		{"a 10.0.0.1\nb bad_host!\n", "f:2: address \"bad_host!\""},
		{"a 10.0.0.1\nb -x.example\n", "f:2: address"},
		// A mistyped IPv4 address is not a DNS name to look up.
		{"a 198.18.0.1\nb 198.18.0.300\n", "f:2: address \"198.18.0.300\": not a valid IP address"},
		{"a 198.18.0.1\nb 10.1.2\n", "f:2: address \"10.1.2\": not a valid IP address"},
		{"a 198.18.0.1\nb node7.42\n", "f:2: address \"node7.42\": not a valid IP address"},
		{"# only one\na 10.0.0.1\n", "f: 1 host: a fleet needs at least 2"},
		{"", "f: 0 hosts: a fleet needs at least 2"},
		{"a 10.0.0.1\n" + strings.Repeat("x", 5000) + "\n", "f:2: line longer than 4096 bytes"},
		{"a 10.0.0.1\nb " + strings.Repeat("x", 300) + "\n", "f:2: address"},
		{"a 10.0.0.1\nb 10.0.0.2 " + strings.Repeat("x", 300) + "\n", "f:2: ssh target"},
	}
	for _, tt := range tests {
		_, err := ParseHosts("f", strings.NewReader(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseHosts(%.40q) = %v, want %q…", tt.in, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("a multi-line error: %q", err)
		}
	}
}

// FuzzParseHosts: any input gives hosts that pass Validate, with unique
// names and addresses, or one error line; never a panic.
func FuzzParseHosts(f *testing.F) {
	b, _ := os.ReadFile("testdata/hosts.txt")
	f.Add(string(b))
	f.Add("a 1.2.3.4\nb ::1 root@b\n")
	f.Add("a 1.2.3.4 # x\n\n\tb\tb.example\n")
	f.Fuzz(func(t *testing.T, in string) {
		hosts, err := ParseHosts("f", strings.NewReader(in))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		names, addrs := map[string]bool{}, map[string]bool{}
		for _, h := range hosts {
			if err := h.Validate(); err != nil {
				t.Fatalf("accepted %+v: %v", h, err)
			}
			if names[h.Name] || addrs[strings.ToLower(h.Address)] {
				t.Fatalf("duplicate %+v", h)
			}
			names[h.Name], addrs[strings.ToLower(h.Address)] = true, true
			if strings.HasPrefix(h.SSH, "-") || strings.ContainsAny(h.Name+h.Address+h.SSH, " \t\n#") {
				t.Fatalf("unsafe host %+v", h)
			}
		}
		if len(hosts) < 2 {
			t.Fatalf("%d hosts accepted", len(hosts))
		}
	})
}
