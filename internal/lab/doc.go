// Package lab builds a virtual two-host lab out of Linux network namespaces,
// so that doctor, bench, tune and report can run their real code paths
// against real kernel interfaces on one machine.
//
// A lab called NAME is two named network namespaces, lr-NAME-a and
// lr-NAME-b, pinned under /run/netns exactly as `ip netns add` pins them (so
// `ip netns exec lr-NAME-a …` works too), joined by a veth pair whose end in
// each namespace is called lab0. Host a has 198.18.0.1/24 and host b
// 198.18.0.2/24 (RFC 2544's benchmarking range). Every lab reuses these two
// addresses: each namespace has its own routing table, so two labs never
// see each other's addresses.
//
// A Scenario shapes the link into a known problem (a rate ceiling, an MTU
// mismatch, small socket buffers). [Up] is a reconciler: it observes what
// exists, plans the difference from what the configuration asks for and
// applies only that, so running it twice changes nothing and running it with
// other arguments reshapes the lab in place. A JSON record under the state
// directory is written before anything is created, and [Down] also finds
// labs by their namespace names, so a lab whose `up` was killed can still be
// removed.
//
// A lab of many hosts (Config.Hosts, 3 to 64) is hosts lr-NAME-h01 … each
// with lab0 at 198.18.0.<i>/24, joined by a bridge in lr-NAME-sw (see
// many.go), for fleet runs; the same reconciler, down, status and Start
// work on it, and PlantFault slows one host's send or receive side.
//
// Everything here needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN); functions
// return [ErrNeedRoot] otherwise.
package lab
