#!/usr/bin/env bash
# bench-engine.sh: linerate's native engine against iperf3 on the same paths.
#
#   sudo scripts/bench-engine.sh [benchengine flags, e.g. -pairs 5 -t 5s]
#
# 1. In a lab (two network namespaces and a veth; made and removed here):
#    capped-10g, one 10 s run of each back to back; healthy, medians of
#    interleaved single-stream pairs, plain and zero-copy, with the CPU time
#    of both ends' processes (cmd/benchengine).
# 2. The hot loop on loopback: the Go benchmark BenchmarkStream/copy (one
#    stream, sender on the first CPU, receiver on the last) against iperf3
#    -A with the same CPUs, interleaved, medians of 9.
# Both pin the sender and the receiver apart; run it on an otherwise idle
# machine, and run it twice: a 2-CPU VM is noisy.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "bench-engine.sh: needs root (network namespaces): run it with sudo" >&2
	exit 2
fi
command -v iperf3 >/dev/null || { echo "bench-engine.sh: iperf3 is not installed: apt-get install -y iperf3" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/linerate" ./cmd/linerate
go test -c -o "$work/engine.test" ./internal/engine

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(iperf3 --version | head -1)"
echo
go run ./cmd/benchengine -linerate "$work/linerate" "$@"
echo

first=$(cut -d- -f1 /sys/devices/system/cpu/online | cut -d, -f1)
last=$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
: >"$work/go"
: >"$work/iperf3"
for i in 1 2 3 4 5 6 7 8 9; do
	"$work/engine.test" -test.run '^$' -test.bench '^BenchmarkStream$/^copy$' -test.benchtime 3s |
		awk '/Gbit\/s/ {for (f = 1; f < NF; f++) if ($(f+1) == "Gbit/s") print $f}' >>"$work/go"
	iperf3 -s -1 -B 127.0.0.1 -p 5299 >/dev/null 2>&1 &
	srv=$!
	sleep 0.3
	iperf3 -c 127.0.0.1 -p 5299 -t 3 -A "$first,$last" -J |
		awk -F: '/"sum_received"/ {r = 1} r && /"bits_per_second"/ {gsub(/[ ,]/, "", $2); print $2 / 1e9; exit}' >>"$work/iperf3"
	wait "$srv" || true
done
g=$(median <"$work/go")
p=$(median <"$work/iperf3")
echo "| path | comparison | native Gbit/s | iperf3 Gbit/s | ratio |"
echo "|---|---|---|---|---|"
echo "| loopback | hot loop: BenchmarkStream/copy vs iperf3 -A $first,$last, 3 s, median of 9 pairs | $g | $p | $(awk -v a="$g" -v b="$p" 'BEGIN {printf "%.3f", a / b}') |"
echo "(Go benchmark runs: $(tr '\n' ' ' <"$work/go"); iperf3 runs: $(tr '\n' ' ' <"$work/iperf3"))"
