package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/testutil"
)

// startIn starts cmd in host h of lab name and stops it (SIGTERM, then
// SIGKILL) when the test ends, before the lab goes down.
func startIn(t *testing.T, name string, h lab.Host, cmd *exec.Cmd) *testutil.Buffer {
	t.Helper()
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := lab.Start(name, h, cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return out
}

// dialIn returns a DialContext that opens its TCP connections inside host
// h of lab name: the socket is made on a thread that entered the host's
// namespaces (and is thrown away afterwards), and keeps the namespace it
// was made in.
func dialIn(name string, h lab.Host) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := osthread.Throwaway(func() error {
			if err := lab.Enter(name, h); err != nil {
				return err
			}
			var err error
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// promQuery asks Prometheus's HTTP API for an instant vector.
func promQuery(client *http.Client, base, expr string) ([]map[string]any, error) {
	resp, err := client.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []map[string]any `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("query %s: %v %s %s", expr, err, r.Error, body)
	}
	return r.Data.Result, nil
}

// sampleOf returns the value of an instant-vector element.
func sampleOf(el map[string]any) float64 {
	v, _ := el["value"].([]any)
	if len(v) != 2 {
		return math.NaN()
	}
	s, _ := v[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// TestLabPrometheus: an agent started with --metrics in lab host b, and a
// real Prometheus in host a scraping it every second; the HTTP API
// returns linerate_nic_info for the lab link and its ceiling (the
// capped-10g scenario shapes it to 10 Gbit/s: 1.25e9 bytes/s).
func TestLabPrometheus(t *testing.T) {
	labNeedsRoot(t)
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is missing and CI=true: install Debian's prometheus package")
		}
		t.Skip("prometheus not installed (Debian package prometheus)")
	}
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	const name = "metrics"
	labUp(t, name, "capped-10g")

	dir := t.TempDir()
	tok, err := agent.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, tok, 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr := net.JoinHostPort(lab.AddrB, "9101")
	agentOut := startIn(t, name, lab.B, exec.Command(bin, "serve", "--bind", lab.AddrB, "--token-file", tokFile,
		"--metrics", metricsAddr, "--metrics-iface", lab.Iface))

	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: linerate
    static_configs: [{targets: [%q]}]
`, metricsAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	const promAddr = "127.0.0.1:9090" // inside host a: a namespace of its own, nothing else listens there
	promOut := startIn(t, name, lab.A, exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr))

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dialIn(name, lab.A)}}
	base := "http://" + promAddr
	// Discovery hands Prometheus its first target after about 5 s: poll.
	var info []map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		info, err = promQuery(client, base, `linerate_nic_info{interface="lab0"}`)
		if err == nil && len(info) > 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(info) != 1 {
		t.Fatalf("no linerate_nic_info{interface=\"lab0\"} within 60 s (last error %v)\nagent:\n%s\nprometheus:\n%s", err, agentOut, promOut)
	}
	lbl, _ := info[0]["metric"].(map[string]any)
	if lbl["kind"] != "veth" || lbl["instance"] != metricsAddr || sampleOf(info[0]) != 1 {
		t.Errorf("linerate_nic_info: %v", info[0])
	}
	ceil, err := promQuery(client, base, `linerate_nic_ceiling_bytes_per_second{interface="lab0"}`)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]float64{}
	for _, el := range ceil {
		m, _ := el["metric"].(map[string]any)
		s, _ := m["stage"].(string)
		stages[s] = sampleOf(el)
	}
	if stages["line_rate"] != 1.25e9 {
		t.Errorf("line_rate ceiling %v B/s, want 1.25e9 (tbf 10gbit); stages %v", stages["line_rate"], stages)
	}
	if g := stages["tcp_goodput"]; !(g > 1.2e9 && g < 1.25e9) {
		t.Errorf("tcp_goodput ceiling %v B/s, want just under the line rate at MTU 9000; stages %v", g, stages)
	}
	up, err := promQuery(client, base, `up{job="linerate"}`)
	if err != nil || len(up) != 1 || sampleOf(up[0]) != 1 {
		t.Errorf("up{job=linerate}: %v %v", up, err)
	}
	errs, err := promQuery(client, base, `sum(linerate_scrape_errors_total)`)
	if err != nil || len(errs) != 1 || sampleOf(errs[0]) != 0 {
		t.Errorf("scrape errors in the lab: %v %v", errs, err)
	}

	// The live exposition, as host a reads it over the lab link, passes
	// promtool check metrics.
	resp, err := client.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on the agent's /metrics: %v\n%s", err, out)
	}
}
