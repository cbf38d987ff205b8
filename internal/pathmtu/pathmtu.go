// Package pathmtu proves whether packets of a given size cross the path to
// a peer unfragmented, the way `ping -M do -s SIZE` does by hand, and finds
// the largest size that does when they do not. It also names the interface
// and MTU the kernel would send through (EgressMTU).
//
// Probe sends ICMP echo requests with the don't-fragment bit set
// (IP_PMTUDISC_DO, or IPV6_PMTUDISC_DO) whose IP packet is exactly the size
// under test, from a raw ICMP socket (root or CAP_NET_RAW) or, failing that,
// an unprivileged ICMP "ping" socket (net.ipv4.ping_group_range). It reads
// why a size failed from what the kernel reports: EMSGSIZE when the local
// route's MTU is smaller, ICMP "fragmentation needed" or "packet too big"
// with the next hop's MTU, a reply that came back in fragments, or silence.
//
// Sockets are opened on the calling goroutine's thread, so a caller that
// has locked its goroutine to a thread in another network namespace
// (runtime.LockOSThread, then setns) probes from that namespace.
package pathmtu

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Defaults for Options.
const (
	// DefaultTimeout is how long one echo request waits for its reply:
	// far above any LAN or continental RTT, short enough that a search
	// with a few lost sizes ends in seconds.
	DefaultTimeout = 400 * time.Millisecond
	// DefaultTries is how many echo requests a size gets before silence
	// counts as failure, so that one lost packet does not shrink the
	// answer.
	DefaultTries = 3
)

// The smallest sizes a search goes down to: the minimum MTU of each IP
// version (RFC 791: every IPv4 link carries 68 bytes unfragmented; RFC
// 8200: every IPv6 link carries 1280). 68 rather than IPv4's 576-byte
// reassembly minimum so that even a badly broken tunnel gets an exact
// answer; the search probes this size once, early, so an unreachable peer
// is told apart from a small MTU after two sizes rather than a dozen.
const (
	MinIPv4MTU = 68
	MinIPv6MTU = 1280
	maxMTU     = 65535 // largest IP packet (without IPv6 jumbograms)
)

// ErrPermission reports that neither kind of ICMP socket could be opened.
var ErrPermission = errors.New("path-MTU probe needs root (raw ICMP socket) or net.ipv4.ping_group_range covering your group")

// Options tune a Probe. The zero value gives the defaults.
type Options struct {
	// Timeout is how long each echo request waits for its reply;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// Tries is how many echo requests a size gets when they go
	// unanswered; 0 means DefaultTries. Definite failures (EMSGSIZE, an
	// ICMP error) are not retried.
	Tries int
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Tries <= 0 {
		o.Tries = DefaultTries
	}
	return o
}

// Reason is why a size did not pass.
type Reason string

// The reasons a size fails.
const (
	// ReasonTimeout: no reply to any try. A link with a smaller MTU
	// dropped the packet without a word (a switch, a veth, a firewall
	// eating ICMP), or the peer does not answer echo requests.
	ReasonTimeout Reason = "timeout"
	// ReasonLocalMTU: the kernel refused to send (EMSGSIZE) because the
	// route's MTU, the interface's or a cached path MTU, is smaller.
	ReasonLocalMTU Reason = "local_mtu"
	// ReasonFragNeeded: a router answered ICMP "fragmentation needed"
	// (IPv4 type 3 code 4) or "packet too big" (ICMPv6 type 2).
	ReasonFragNeeded Reason = "frag_needed"
	// ReasonReplyFragmented: the request got through but the reply came
	// back in fragments, so the path back carries less than this size.
	ReasonReplyFragmented Reason = "reply_fragmented"
	// ReasonUnreachable: another ICMP error (host or network unreachable,
	// administratively prohibited, time exceeded) or a send error.
	ReasonUnreachable Reason = "unreachable"
)

// Failure is one size that did not pass.
type Failure struct {
	Size   int    `json:"size"`
	Reason Reason `json:"reason"`
	// MTU is the MTU the kernel or a router reported (the local route's
	// for local_mtu, the next hop's for frag_needed, the largest fragment
	// for reply_fragmented); 0 when none was reported.
	MTU int `json:"mtu,omitempty"`
	// From is the router or host that sent the ICMP error, if any.
	From string `json:"from,omitempty"`
	// Detail says what happened in words.
	Detail string `json:"detail"`
}

// Result is what a Probe found.
type Result struct {
	Dst  netip.Addr `json:"dst"`
	Size int        `json:"size"` // the size asked for (IP packet bytes)
	OK   bool       `json:"ok"`   // a packet of Size crossed both ways unfragmented
	// Largest is the largest size that passed: Size when OK, 0 when no
	// size did (the peer is unreachable or ignores echo requests).
	Largest int `json:"largest_ok"`
	// Probes is the number of echo requests attempted, including any the
	// kernel refused to send.
	Probes int `json:"probes"`
	// Failures lists each size that failed, in the order tried.
	Failures []Failure `json:"failures"`
	// Socket is the kind of socket used: "raw" or "ping".
	Socket string `json:"socket"`
}

// minMTU returns the smallest MTU of dst's IP version.
func minMTU(dst netip.Addr) int {
	if dst.Is4() {
		return MinIPv4MTU
	}
	return MinIPv6MTU
}

// checkArgs validates Probe's destination and size; dst must already be
// unmapped.
func checkArgs(dst netip.Addr, mtu int) error {
	if !dst.IsValid() || dst.IsUnspecified() || dst.IsMulticast() {
		return fmt.Errorf("pathmtu: %v is not a unicast destination", dst)
	}
	if lo := minMTU(dst); mtu < lo || mtu > maxMTU {
		return fmt.Errorf("pathmtu: size %d outside %d..%d for %v", mtu, lo, maxMTU, dst)
	}
	return nil
}
