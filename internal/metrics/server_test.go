package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scrape GETs /metrics from h and returns the status and parsed body.
func scrape(t *testing.T, url string) (int, *exposition) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	return resp.StatusCode, parseExposition(t, body)
}

// TestScrapeDuringFailingReads: a scrape while the module does not answer
// (EIO) and the results database is locked answers 200 with every other
// metric, and counts each failed source once per collection.
func TestScrapeDuringFailingReads(t *testing.T) {
	fs := openTree(t, "t6-cwdm4-dark-lane")
	db := filepath.Join(t.TempDir(), "results.db")
	writeRuns(t, db, run("198.18.0.2", "native", 1, 9.5, `{}`))
	lockDatabase(t, db)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	eth := &treeEthtool{fs: fs, moduleReads: map[string]int{}, failModule: "EIO: Input/output error"}
	l := &Live{FS: fs, DBPath: db, now: func() time.Time { return now }, eth: eth}
	srv := httptest.NewServer(Handler(NewRegistry(NewCollector(l.Snapshot, "test")), nil))
	defer srv.Close()

	code, e := scrape(t, srv.URL)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	errs := func(src string) float64 {
		return e.value(t, "linerate_scrape_errors_total", map[string]string{"source": src})
	}
	if errs(SourceStore) != 1 || errs(SourceModule) != 2 || errs(SourceDoctor) != 0 {
		t.Errorf("errors: store %v, module %v, doctor %v; want 1, 2 (both ports), 0", errs(SourceStore), errs(SourceModule), errs(SourceDoctor))
	}
	if len(e.samples("linerate_nic_info", nil)) != 2 || len(e.samples("linerate_pcie_link_width_lanes", nil)) != 2 {
		t.Error("the NICs' metrics are missing beside the failing reads")
	}
	if len(e.samples("linerate_bench_goodput_bytes_per_second", nil)) != 0 {
		t.Error("bench results from a locked database")
	}
	if len(e.samples("linerate_scrape_duration_seconds", map[string]string{"source": SourceStore})) != 1 {
		t.Error("no store duration")
	}

	now = now.Add(DefaultTTL) // the next collection fails again: counted again
	_, e = scrape(t, srv.URL)
	if errs(SourceStore) != 2 {
		t.Errorf("store errors %v after a second failing collection, want 2", errs(SourceStore))
	}
}

// TestScrapeWithoutDoctor: a host whose doctor cannot run (no
// sys/class/net) still answers 200, with the doctor error counted and
// linerate_build_info, and no NIC series.
func TestScrapeWithoutDoctor(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	l := &Live{FS: openTreeAt(t, dir), NoStore: true}
	srv := httptest.NewServer(Handler(NewRegistry(NewCollector(l.Snapshot, "v1.2.3")), nil))
	defer srv.Close()
	code, e := scrape(t, srv.URL)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if e.value(t, "linerate_scrape_errors_total", map[string]string{"source": SourceDoctor}) != 1 {
		t.Error("doctor error not counted")
	}
	if e.value(t, "linerate_build_info", map[string]string{"version": "v1.2.3"}) != 1 {
		t.Error("no build info")
	}
	if len(e.samples("linerate_nic_info", nil)) != 0 || e.mfs["linerate_doctor_timestamp_seconds"] != nil {
		t.Error("NIC facts without a doctor report")
	}
}

// TestHandlerRoutes: / points at /metrics, other paths are 404, and
// /metrics takes only GET (and HEAD).
func TestHandlerRoutes(t *testing.T) {
	l := treeLive(t, "t6-cwdm4-healthy")
	srv := httptest.NewServer(Handler(NewRegistry(NewCollector(l.Snapshot, "test")), nil))
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/", 200, "GET /metrics"},
		{"GET", "/debug/pprof/", 404, ""},
		{"POST", "/metrics", 405, ""},
		{"HEAD", "/metrics", 200, ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", c.method, c.path, resp.StatusCode, b, c.code, c.body)
		}
	}
}

// TestListen: the metrics address must name an IP address and a port;
// the listener is bound to exactly that address.
func TestListen(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{":9101", "has no address"},
		{"9101", "want ADDRESS:PORT"},
		{"127.0.0.1:0", "must be 1 to 65535"},
		{"127.0.0.1:http", "must be 1 to 65535"},
		{"localhost:9101", "not an IP address"},
		{"192.0.2.77:9101", "is the address on this host"},
	} {
		ln, err := Listen(c.addr)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", c.addr)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--metrics") {
			t.Errorf("Listen(%q): %v, want an error naming --metrics and %q", c.addr, err, c.want)
		}
	}
	// A port free a moment ago: bound to exactly the address asked.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := ln.Addr().String(); got != addr {
		t.Errorf("bound to %s, want exactly %s", got, addr)
	}
}

// TestScrapesBounded: with maxScrapes scrapes in progress (their
// collection stalled), one more is answered 503 at once, and the stalled
// ones complete when the collection does.
func TestScrapesBounded(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, maxScrapes+1)
	src := func() *Snapshot {
		entered <- struct{}{}
		<-release
		return NewSnapshot(time.Now())
	}
	srv := httptest.NewServer(Handler(NewRegistry(NewCollector(src, "test")), nil))
	defer srv.Close()
	codes := make(chan int, maxScrapes)
	for range maxScrapes {
		go func() {
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range maxScrapes {
		<-entered
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("scrape %d while %d are in progress: status %d, want 503", maxScrapes+1, maxScrapes, resp.StatusCode)
	}
	close(release)
	for range maxScrapes {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("a stalled scrape ended with %d, want 200", c)
		}
	}
}

// TestServerTimeouts: the listener's server bounds every phase of a
// request: a silent client is dropped after readHeaderTimout, a scrape
// is written within the promhttp timeout and a margin.
func TestServerTimeouts(t *testing.T) {
	s := newHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadHeaderTimeout > 10*time.Second || s.ReadTimeout <= 0 ||
		s.WriteTimeout <= scrapeTimeout || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 64<<10 {
		t.Errorf("unbounded server: header %v, read %v, write %v, idle %v, header bytes %d",
			s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}

// TestServeStops: Serve returns nil once its context is done, and the
// address is free again.
func TestServeStops(t *testing.T) {
	ln, err := Listen("127.0.0.1:" + freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, http.NotFoundHandler()) }()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("%s still in use after Serve returned: %v", addr, err)
	} else {
		again.Close()
	}
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
