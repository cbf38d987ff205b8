// Package result holds linerate.bench/v1, the JSON document of one run:
// what the native engine's client writes, what every tool driver's parser
// (iperf3, iperf2, perftest) turns its tool's output into, what bench's
// campaigns store and the report reads. It is data only: Go types whose
// JSON field names are the contract (docs/architecture.md, "JSON
// documents"), and the few names that cross the agent's wire too
// (Direction, ZeroCopy, Mode, SkipRxCopy, TCPStats, HostInfo).
package result
