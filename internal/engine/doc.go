// Package engine is linerate's native data path: N TCP streams, each on
// its own OS thread pinned to a CPU, or many flows on few epoll threads,
// or request/response transactions (rr, crr) over F flows on T threads;
// with per-flow counters, TCP_INFO and per-CPU host telemetry sampled at
// every interval boundary.
// One end of a test is a Side; client and agent run the same code. Which
// CPUs the threads get comes from the host's facts (HostFacts): CPUs
// local to the NIC, off those serving its interrupts, as package
// placement decides for doctor and tune.
//
// The engine knows nothing of the control protocol that sets a test up
// (package agent does that: it connects the sockets and hands them here)
// nor of how results are shown or stored (packages result and bench).
//
// # Data path
//
// Each stream's socket is taken out of Go's poller (its descriptor is
// duplicated and made blocking) and driven with plain read(2), write(2),
// sendfile(2) or sendmsg(2) from a goroutine locked to its OS thread, whose
// affinity is set to one CPU: the same system calls iperf3 makes, with no
// poller wake-ups between them. Flows that share a thread (Params.Threads
// below the streams, every transaction test) are non-blocking sockets in
// the thread's own epoll instance, as neper drives them (epoll.go,
// poll.go, txn.go). These are the hand-written hot loops of the project
// (docs/architecture.md, "Packages" and "Transactions, many flows and the
// receiver's copy"): no library drives pinned sockets this way.
package engine
