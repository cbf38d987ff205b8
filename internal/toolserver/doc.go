// Package toolserver starts the servers of the external benchmark tools
// (iperf3, iperf 2, sockperf, netserver, perftest's ib_* tools) for a
// client that asked: on the agent's host for a remote client
// (AgentTools, which `linerate serve` hands the agent), or in a lab host.
//
// A server is asked for as a ToolServer, a structured description that
// Argv checks against an allowlist and turns into a command line with
// bounded arguments (never a shell); its credentials are derived from the
// agent session's secret, so no password crosses the wire (auth.go); it
// runs as a user of its own, with no capability and no_new_privs
// (privilege.go), since whoever reaches its port talks to it before its
// own authentication. This
// is code a network peer reaches: it imports nothing that stores, tunes
// or runs a campaign (internal/archtest).
package toolserver
