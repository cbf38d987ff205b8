package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// refusals logs refused connections without letting a flood flood the
// log: the first refusal of a kind from an address is logged at once,
// with its reason in full; the others of the same window are counted and
// logged as one line when the window ends ("refused 3,412 connections
// from 198.18.0.1 in the last 10 s: nothing sent"). A flood thus costs two
// lines per address and kind per window, however many connections it
// makes.
type refusals struct {
	log    *slog.Logger
	window time.Duration

	mu     sync.Mutex
	counts map[refusalKey]*tally
}

// tally counts one kind of refusal from one address in the window.
type tally struct {
	n     int  // refusals in this window
	shown bool // the first of them was logged on its own
}

// refusalKey is one kind of refusal from one address; an invalid address
// stands for every address beyond maxRefusalKeys.
type refusalKey struct {
	src  netip.Addr
	kind string
}

// maxRefusalKeys bounds the addresses and kinds remembered in a window.
const maxRefusalKeys = 1024

// Kinds of refusal, as the summary lines name them.
const (
	kindSilent   = "nothing sent"
	kindSlow     = "handshake not finished in time"
	kindGarbage  = "not a linerate client"
	kindVersion  = "another protocol version"
	kindAuth     = "authentication failed"
	kindFull     = "too many connections waiting"
	kindData     = "data connection no test expects"
	kindBusy     = "busy with another test"
	kindAccept   = "accepting connections failed"
	kindProtocol = "broke the protocol after authenticating"
)

func newRefusals(log *slog.Logger, window time.Duration) *refusals {
	return &refusals{log: log, window: window, counts: map[refusalKey]*tally{}}
}

// note records one refusal of kind from src; detail is the full reason,
// logged if it is the first of its kind and address in this window.
func (r *refusals) note(src netip.Addr, kind, detail string, attrs ...any) {
	r.mu.Lock()
	k := refusalKey{src, kind}
	t, seen := r.counts[k]
	if !seen && len(r.counts) >= maxRefusalKeys {
		k.src = netip.Addr{}
		t, seen = r.counts[k]
	}
	if seen {
		t.n++
		r.mu.Unlock()
		return
	}
	r.counts[k] = &tally{n: 1, shown: true}
	r.mu.Unlock()
	r.log.Warn("refused connection", append([]any{"peer", peerName(k.src), "kind", kind, "reason", detail}, attrs...)...)
}

func peerName(src netip.Addr) string {
	if src.IsValid() {
		return src.String()
	}
	return "other addresses"
}

// run summarises every window until ctx is done, then once more.
func (r *refusals) run(ctx context.Context) {
	t := time.NewTicker(r.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.flush()
			return
		case <-t.C:
			r.flush()
		}
	}
}

// flush logs one line per address and kind refused more often in the
// window than its lines said, and forgets those that were quiet.
func (r *refusals) flush() {
	type line struct {
		k refusalKey
		n int
	}
	var lines []line
	r.mu.Lock()
	for k, t := range r.counts {
		if t.n == 0 || (t.n == 1 && t.shown) {
			delete(r.counts, k)
			continue
		}
		lines = append(lines, line{k, t.n})
		*t = tally{}
	}
	r.mu.Unlock()
	slices.SortFunc(lines, func(a, b line) int {
		if c := a.k.src.Compare(b.k.src); c != 0 {
			return c
		}
		return strings.Compare(a.k.kind, b.k.kind)
	})
	for _, l := range lines {
		from := peerName(l.k.src)
		r.log.Warn("refused "+thousands(l.n)+" connections from "+from+" in the last "+seconds(r.window)+": "+l.k.kind,
			"peer", from, "kind", l.k.kind, "count", l.n)
	}
}

// thousands writes n with commas: 3412 → "3,412".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seconds writes a window as "10 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
