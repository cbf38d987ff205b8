// Package agent is linerate's peer agent (`linerate serve`) and the client
// side of its control protocol: the framing, the handshake and its token,
// the session keys, the test sessions that hand connected sockets to
// package engine, and the relays that let bench's other drivers use the
// agent too (tool servers with one-time credentials, the agent host's
// doctor report). docs/architecture.md, "The agent's protocol", tells the
// whole of it; proto.go lists every message and its bounds.
//
// # Control protocol (version 2)
//
// A test uses one TCP connection to the agent's port (5301 by default) for
// control, and one more per stream for data, to the same port. Every
// control message is a frame: a 4-byte big-endian length, then that many
// bytes of JSON holding an object with a "type" field. Frames are bounded
// before they are read: 4 KiB before authentication, 1 MiB after, 16 MiB
// for the one doctor report a client asked for. The client speaks first:
//
//	client → hello{version}
//	agent  → challenge{version, nonce: 32 random bytes}
//	client → auth{nonce: 32 random bytes, mac: HMAC-SHA256(token, "linerate/2 client" ‖ agent nonce ‖ client nonce)}
//	agent  → welcome{mac: HMAC-SHA256(token, "linerate/2 server" ‖ agent nonce ‖ client nonce ‖ host), host}
//	(from here on, every frame is body ‖ HMAC-SHA256(key of its direction, sequence number ‖ body))
//	client → request{streams, duration_ms, …, mode, threads, size, depth}
//	agent  → accept{port, test_id, placement} | busy | error
//	(data connections: "LRDATA02" ‖ test ID ‖ stream index ‖ HMAC-SHA256(data key, test ID ‖ index), then payload;
//	 crr: a connection per transaction to the accept's port, a listener of the test's own, its proof in crr.go)
//	agent  → ready{window}
//	client → start
//	agent  → interval{…} every interval
//	client → stop
//	agent  → end{per-stream totals, nic_counters}
//
// The token (at least 128 random bits, CheckToken) never crosses the wire.
// The agent checks the client's proof in constant time and proves it holds
// the token too, over its host facts; the labels keep the two proofs
// apart. Both ends then derive the session keys with HKDF-SHA256 over the
// token, salted with both nonces (keys.go): one per direction for the
// control frames, one for data preambles, one for tool credentials. A
// frame altered, dropped, replayed, reordered or injected fails its MAC and
// ends the session. A recorded handshake cannot be replayed: the agent's
// nonce is fresh for every connection. The agent runs one test at a time;
// an authenticated client that finds it busy gets "busy".
//
// # Connection budget
//
// Before a connection has authenticated (or shown its data preamble) it
// is pending (gate.go): 3 s in all to get there, at most 1088 pending per
// source address and 4096 in all, and at a cap the pending connection that
// has waited longest with nothing sent is closed to make room rather than
// the newcomer refused. Refusals are logged once per address and kind and
// then summarised (refusals.go).
package agent
