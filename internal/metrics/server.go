package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Bounds of the metrics listener: it answers anyone who can reach the
// address, without a token, so every size, duration and count is capped.
const (
	maxConns          = 16 // open connections (connGate: idle ones make room)
	maxConnsPerSource = 4  // open connections from one address
	maxScrapes        = 4  // scrapes at once; more are answered 503
	scrapeTimeout     = 30 * time.Second
	// A scraper sends its request at once and scrapes every few seconds
	// at most: a connection that says nothing for 2 s, or stays idle 5 s,
	// is not one.
	readHeaderTimout = 2 * time.Second
	idleTimeout      = 5 * time.Second
	maxHeaderBytes   = 8 << 10
)

// Listen opens the metrics listener on addr, which must name an address
// and a port ("198.18.0.2:9101", "[::1]:9101"): the listener is bound to
// exactly that address, never to every address by default. "0.0.0.0:9101"
// asks for every IPv4 address explicitly.
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %q: want ADDRESS:PORT, e.g. 127.0.0.1:9101 or [::1]:9101", addr)
	}
	if host == "" {
		return nil, fmt.Errorf("--metrics %q has no address: name the one to listen on, e.g. 127.0.0.1%s (0.0.0.0%s for every IPv4 address)", addr, addr, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("--metrics %q: port %q must be 1 to 65535", addr, port)
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("--metrics %q: %q is not an IP address (a name could resolve to several)", addr, host)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: listening on %s: %w (is the address on this host, and the port free?)", addr, err)
	}
	return ln, nil
}

// Handler serves /metrics from g, and a short pointer to it at /.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            promLogger{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapes,
		Timeout:             scrapeTimeout,
	}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "linerate metrics: GET /metrics\n")
	})
	return mux
}

// Serve serves h on ln until ctx is done, then shuts down, giving
// scrapes in progress a few seconds. It closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := newHTTPServer(h)
	gate := newConnGate(ln, maxConns, maxConnsPerSource)
	srv.ConnState = gate.track
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(gate)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return err
}

// newHTTPServer bounds how long a client may take to send its request
// (a slow or silent client cannot hold a connection), how long a scrape
// may take to be written, and how long an idle connection stays open.
// Serve adds the connection gate (connGate).
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimout,
		ReadTimeout:       readHeaderTimout,
		WriteTimeout:      scrapeTimeout + 5*time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// promLogger hands promhttp's error lines to slog.
type promLogger struct{ log *slog.Logger }

func (p promLogger) Println(v ...any) {
	if p.log != nil {
		p.log.Warn(fmt.Sprint(v...))
	}
}
