package fleet

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/testutil"
	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers A and AAAA queries for one name from a table, over UDP
// on loopback: a stand-in for the cluster's DNS that Go's own resolver
// queries for real.
func dnsServer(t *testing.T, name string, v4, v6 []string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
			if strings.EqualFold(q.Name.String(), name) {
				switch q.Type {
				case dnsmessage.TypeA:
					for _, a := range v4 {
						ip := net.ParseIP(a).To4()
						b.AResource(rh, dnsmessage.AResource{A: [4]byte(ip)})
					}
				case dnsmessage.TypeAAAA:
					for _, a := range v6 {
						b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: [16]byte(net.ParseIP(a).To16())})
					}
				}
			}
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func resolverAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// TestK8sHosts: the agents behind a headless Service, found by Go's
// resolver asking a DNS server for the Service's A and AAAA records.
func TestK8sHosts(t *testing.T) {
	srv := dnsServer(t, "linerate-agents.linerate.svc.cluster.local.",
		[]string{"10.0.3.17", "10.0.3.2", "10.0.12.5", "10.0.3.2"}, []string{"fd00::7"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hosts, err := K8sHosts(ctx, resolverAt(srv), "linerate-agents.linerate.svc.cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hosts {
		got = append(got, h.Name+"="+h.Address)
		if err := h.Validate(); err != nil {
			t.Error(err)
		}
	}
	want := "10.0.3.2=10.0.3.2 10.0.3.17=10.0.3.17 10.0.12.5=10.0.12.5 fd00--7=fd00::7"
	if strings.Join(got, " ") != want {
		t.Errorf("hosts %v, want %s", got, want)
	}
	// A Service with one agent, and a name that does not exist.
	one := dnsServer(t, "solo.linerate.svc.cluster.local.", []string{"10.0.0.1"}, nil)
	if _, err := K8sHosts(ctx, resolverAt(one), "solo.linerate.svc.cluster.local"); err == nil || !strings.Contains(err.Error(), "1 ready agent") {
		t.Errorf("one agent: %v", err)
	}
	if _, err := K8sHosts(ctx, resolverAt(one), "nothere.linerate.svc.cluster.local"); err == nil || !strings.Contains(err.Error(), "looking up the agents") {
		t.Errorf("missing Service: %v", err)
	}
	for _, bad := range []string{"", "10.0.0.1", "-x", "a b", "svc/../x"} {
		if _, err := K8sHosts(ctx, resolverAt(one), bad); err == nil {
			t.Errorf("--k8s %q accepted", bad)
		}
	}
}

// TestKubernetesManifests validates deploy/kubernetes offline with
// kubernetes-validate --strict (PyPI: pip install kubernetes-validate),
// checks that a misspelled field fails it (so the check has teeth), and
// that the pieces name each other consistently.
func TestKubernetesManifests(t *testing.T) {
	files, err := filepath.Glob("../../deploy/kubernetes/*.yaml")
	if err != nil || len(files) != 4 {
		t.Fatalf("manifests %v, %v", files, err)
	}
	out := testutil.KubernetesValidate(t, files...)
	kv, _ := exec.LookPath("kubernetes-validate") // there: the validation above ran
	for _, want := range []string{"namespace/linerate", "daemonset/linerate-agent", "service/linerate-agents", "job/linerate-fleet"} {
		if !strings.Contains(string(out), "passed for resource "+want) {
			t.Errorf("kubernetes-validate did not pass %s:\n%s", want, out)
		}
	}
	ds, _ := os.ReadFile("../../deploy/kubernetes/agent-daemonset.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(string(ds), "hostNetwork:", "hostNetwrk:", 1)), 0o644)
	if out, err := exec.Command(kv, "--strict", bad).CombinedOutput(); err == nil || !strings.Contains(string(out), "hostNetwrk") {
		t.Errorf("a misspelled field passed: %v\n%s", err, out)
	}

	job, _ := os.ReadFile("../../deploy/kubernetes/fleet-job.yaml")
	svc, _ := os.ReadFile("../../deploy/kubernetes/agent-service.yaml")
	for _, c := range []struct {
		file, text, want string
	}{
		{"agent-daemonset.yaml", string(ds), "hostNetwork: true"},
		{"agent-daemonset.yaml", string(ds), "- $(POD_IP)"},
		{"agent-daemonset.yaml", string(ds), "fieldPath: status.podIP"},
		{"agent-daemonset.yaml", string(ds), `drop: ["ALL"]`},
		{"agent-daemonset.yaml", string(ds), "- --token-file\n            - /etc/linerate/node.key"},
		{"agent-daemonset.yaml", string(ds), "hostPath:\n            path: /etc/linerate"},
		{"agent-daemonset.yaml", string(ds), "- --relay-peers\n            - $(RELAY_PEERS)"},
		{"agent-daemonset.yaml", string(ds), "exec:\n              command:\n                - linerate\n                - serve\n                - --check"},
		{"agent-daemonset.yaml", string(ds), "- name: LINERATE_BIND\n              valueFrom:\n                fieldRef:\n                  fieldPath: status.podIP"},
		{"agent-service.yaml", string(svc), "clusterIP: None"},
		{"agent-service.yaml", string(svc), "name: linerate-agents"},
		{"agent-service.yaml", string(svc), "component: agent"},
		{"fleet-job.yaml", string(job), "- --k8s\n            - linerate-agents"},
		{"fleet-job.yaml", string(job), "secretName: linerate-fleet-secret"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q", c.file, c.want)
		}
	}
	// No agent holds a secret that opens the others: the DaemonSet
	// mounts no Secret (one Secret is the same on every node).
	// The readiness probe authenticates: a bare TCP probe is logged by
	// every agent as a refused stranger every 10 s.
	if strings.Contains(string(ds), "tcpSocket:") {
		t.Error("agent-daemonset.yaml probes with tcpSocket: the agent logs it as a refused connection")
	}
	if strings.Contains(string(ds), "secretName:") {
		t.Error("agent-daemonset.yaml mounts a Secret: every node would hold the same key")
	}
}
