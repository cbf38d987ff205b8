#!/usr/bin/env bash
# bench-neper.sh: linerate's engine against neper (google/neper), the
# kernel developers' own load generator, on the same lab path.
#
#   sudo NEPER_DIR=/path/to/neper scripts/bench-neper.sh [benchengine flags, e.g. -pairs 3 -t 3s]
#
# NEPER_DIR is a directory holding a neper build (tcp_rr, tcp_crr and
# tcp_stream, as its Makefile makes them); this script builds no part of
# neper. In a lab (two network namespaces and a veth; made and removed
# here), interleaved pairs, each order in turn:
#   - rr: linerate 10 flows on 2 threads, 1-byte requests and responses,
#     against neper tcp_rr -F 10 -T 2 (transactions/s);
#   - crr: linerate 1 flow, a connection per transaction, against neper
#     tcp_crr (its defaults: 1 flow, 1 thread; transactions/s);
#   - stream: linerate 100 streams on 2 threads against neper tcp_stream
#     -F 100 -T 2 (the receiver's Gbit/s).
# linerate runs through package agent (cmd/benchengine -mode neper), both
# ends placed as the agent places them (a transaction's two ends on one
# CPU when both run on one machine); neper's threads are left to the
# scheduler, its default. It prints a Markdown table: medians, ratios and
# every run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${NEPER_DIR:-}" ]; then
	echo "bench-neper.sh: set NEPER_DIR to a directory with a neper build (tcp_rr, tcp_crr, tcp_stream)" >&2
	exit 2
fi
for p in tcp_rr tcp_crr tcp_stream; do
	if [ ! -x "$NEPER_DIR/$p" ]; then
		echo "bench-neper.sh: no $p in NEPER_DIR=$NEPER_DIR: build neper there first (make tcp_rr tcp_crr tcp_stream)" >&2
		exit 2
	fi
done
if [ "$(id -u)" != 0 ]; then
	echo "bench-neper.sh: needs root (network namespaces): run it with sudo" >&2
	exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/benchengine" ./cmd/benchengine

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "neper: $NEPER_DIR ($("$NEPER_DIR/tcp_rr" --nolog --version 2>/dev/null | head -1 || echo 'version unknown'))"
echo
"$work/benchengine" -mode neper -neper "$NEPER_DIR" -lab neper "$@"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
