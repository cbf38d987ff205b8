// Package engine is linerate's native traffic engine: N TCP streams, each
// on its own OS thread pinned to a CPU, between a client (Run) and a peer
// agent (Server), with per-stream TCP_INFO and per-CPU host telemetry
// sampled on both ends at every interval.
//
// # Control protocol
//
// A test uses one TCP connection to the agent's port (5301 by default) for
// control, and one more per stream for data, to the same port. Every
// control message is a frame: a 4-byte big-endian length, then that many
// bytes of JSON holding an object with a "type" field. Frames are bounded
// (4 KiB before authentication, 1 MiB after) and every read
// has a deadline. The client speaks first:
//
//	client → hello{version}
//	agent  → challenge{nonce: 32 random bytes}
//	client → auth{nonce: 32 random bytes, mac: HMAC-SHA256(token, "linerate/1 client" ‖ agent nonce ‖ client nonce)}
//	agent  → welcome{mac: HMAC-SHA256(token, "linerate/1 server" ‖ agent nonce ‖ client nonce), host}
//	client → request{streams, duration, …}
//	agent  → accept{port, cookie, placement, window} | busy | error
//	(data connections: "LRDATA01" ‖ cookie ‖ stream index, 44 bytes, then payload)
//	agent  → ready
//	client → start
//	agent  → interval{…} every interval
//	client → stop
//	agent  → end{per-stream totals}
//
// The token never crosses the wire. The agent checks the client's MAC in
// constant time and proves it holds the token too, so the client
// authenticates the agent. A recorded handshake cannot be replayed: the
// agent's nonce is fresh for every connection. The agent runs one test at
// a time; an authenticated client that finds it busy gets "busy".
//
// # Data path
//
// Each stream's socket is taken out of Go's poller (its descriptor is
// duplicated and made blocking) and driven with plain read(2), write(2),
// sendfile(2) or sendmsg(2) from a goroutine locked to its OS thread, whose
// affinity is set to one CPU: the same system calls iperf3 makes, with no
// poller wake-ups between them. This is the hand-written hot loop
// DESIGN.md allows.
package engine
