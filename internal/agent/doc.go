// Package agent is linerate's peer agent (`linerate serve`) and the client
// side of its control protocol: the framing, the handshake and its token,
// the test sessions that hand connected sockets to package engine, and
// the relays that let bench's other drivers use the agent too (tool
// servers, the agent host's doctor report).
//
// # Control protocol
//
// A test uses one TCP connection to the agent's port (5301 by default) for
// control, and one more per stream for data, to the same port. Every
// control message is a frame: a 4-byte big-endian length, then that many
// bytes of JSON holding an object with a "type" field. Frames are bounded
// (4 KiB before authentication, 1 MiB after, 16 MiB for the one doctor
// report a client asked for) and every read has a deadline. The client
// speaks first:
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
package agent
