package mesh

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/testutil"
)

// TestKubernetesManifests validates deploy/kubernetes/mesh offline with
// kubernetes-validate --strict (PyPI), and checks that the DaemonSet and
// the Service name each other and keep the agents to the nodes.
func TestKubernetesManifests(t *testing.T) {
	files, err := filepath.Glob("../../deploy/kubernetes/mesh/*.yaml")
	if err != nil || len(files) != 2 {
		t.Fatalf("manifests %v, %v", files, err)
	}
	out := testutil.KubernetesValidate(t, files...)
	for _, want := range []string{"daemonset/linerate-mesh", "service/linerate-mesh"} {
		if !strings.Contains(string(out), "passed for resource "+want) {
			t.Errorf("kubernetes-validate did not pass %s:\n%s", want, out)
		}
	}
	ds, _ := os.ReadFile("../../deploy/kubernetes/mesh/mesh-daemonset.yaml")
	svc, _ := os.ReadFile("../../deploy/kubernetes/mesh/mesh-service.yaml")
	for _, c := range []struct{ file, text, want string }{
		{"mesh-daemonset.yaml", string(ds), "hostNetwork: true"},
		{"mesh-daemonset.yaml", string(ds), "- --bind\n            - $(POD_IP)"},
		{"mesh-daemonset.yaml", string(ds), "- --mesh-peers\n            - $(MESH_PEERS)"},
		{"mesh-daemonset.yaml", string(ds), "- --port\n            - \"5302\""},
		{"mesh-daemonset.yaml", string(ds), "- --token-file\n            - /etc/linerate/node.key"},
		{"mesh-daemonset.yaml", string(ds), "protocol: UDP"},
		{"mesh-daemonset.yaml", string(ds), `drop: ["ALL"]`},
		{"mesh-service.yaml", string(svc), "clusterIP: None"},
		{"mesh-service.yaml", string(svc), "component: mesh"},
		{"mesh-service.yaml", string(svc), "port: 5302"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q", c.file, c.want)
		}
	}
	if strings.Contains(string(ds), "secretName:") {
		t.Error("the mesh DaemonSet mounts a Secret: one Secret is the same on every node, and would open every agent")
	}
}
