#!/usr/bin/env bash
# bench-udp-jitter.sh: the native UDP stream's RFC 3550 jitter and
# per-interval loss against iperf3 -u's, on the same lab path, same
# placement, interleaved.
#
#   sudo flock /tmp/linerate-lab.lock scripts/bench-udp-jitter.sh [ROUNDS] [SECONDS]
#
# In a lab 'udpjit' (healthy scenario; made and removed here), ROUNDS
# rounds (default 3) of, back to back, at 1 Gbit/s and at 100 Mbit/s of
# 1460-byte datagrams: linerate bench --udp, then iperf3 -u (client CPU
# 0, server CPU 1 for both). One row per run: the end's jitter and loss,
# and the range of the measured intervals' jitter (native: the
# receiver's intervals[].streams[].jitter_ms; iperf3: its server's
# intervals, --get-server-output). Then per rate the medians and the
# median of the rounds' native / iperf3 jitter ratios. KEEP=DIR keeps
# the documents.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}

if [ "$(id -u)" != 0 ]; then
	echo "bench-udp-jitter.sh: needs root (network namespaces): run it with sudo" >&2
	exit 2
fi
for t in iperf3 jq; do
	command -v $t >/dev/null || { echo "bench-udp-jitter.sh: $t is not installed: apt-get install -y $t" >&2; exit 2; }
done

work=$(mktemp -d)
lab=udpjit
cleanup() { "$work/linerate" lab down --name $lab >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/linerate" ./cmd/linerate
lr="$work/linerate"
"$lr" lab up --name $lab >/dev/null
a="ip netns exec lr-$lab-a"
b="ip netns exec lr-$lab-b"

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(iperf3 --version | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "lab $lab (healthy), client in lr-$lab-a CPU 0, server in lr-$lab-b CPU 1, $secs s per run, $rounds rounds"
echo

keep() { if [ -n "${KEEP:-}" ]; then cp "$1" "$KEEP/$2"; fi; }
native() {
	"$lr" bench lab:$lab --udp -b "$1" -l 1460 -t "$secs" -A 0,1 --no-store -J > "$work/n.json"
	keep "$work/n.json" native-$1-r$r.json
	jq -r --arg t "native -b $1 r$r" '.end.udp as $u | [.intervals[] | select(.omitted | not) | .streams[0].jitter_ms] as $j |
		[$t, $u.bits_per_second, $u.lost_percent, $u.jitter_ms, ($j | min), ($j | max)] | @tsv' "$work/n.json"
}
iperf3u() {
	$b iperf3 -s -1 -p 5298 -A 1 >/dev/null 2>&1 &
	local srv=$!
	sleep 0.5
	$a iperf3 -c 198.18.0.2 -p 5298 -u -b "$1" -l 1460 -t "$secs" -A 0 --get-server-output -J > "$work/i.json" || true
	wait $srv || true
	keep "$work/i.json" iperf3-$1-r$r.json
	# The server's intervals come as its text (iperf3 -s without -J): "… 0.005 ms  507/85583 (0.59%)".
	jq -r --arg t "iperf3 -b $1 r$r" '.end.sum as $s | [.server_output_text | split("\n")[] | select(test(" sec .* ms ") and (test("receiver") | not)) | capture("(?<j>[0-9.]+) ms").j | tonumber] as $j |
		[$t, $s.bits_per_second, $s.lost_percent, $s.jitter_ms, ($j | min), ($j | max)] | @tsv' "$work/i.json"
}

printf '%-20s %12s %8s %12s %24s\n' "run" "sent bit/s" "lost %" "jitter ms" "intervals' jitter ms"
: > "$work/rows.tsv"
for r in $(seq "$rounds"); do
	for rate in 1G 100M; do
		native $rate | tee -a "$work/rows.tsv"
		iperf3u $rate | tee -a "$work/rows.tsv"
	done
done | awk -F'\t' '{printf "%-20s %12.4g %8.3f %12.4f %11.4f – %-10.4f\n", $1, $2, $3, $4, $5, $6}'
echo

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo "medians over $rounds rounds:"
for rate in 1G 100M; do
	n=$(grep "^native -b $rate " "$work/rows.tsv" | cut -f4 | median)
	i=$(grep "^iperf3 -b $rate " "$work/rows.tsv" | cut -f4 | median)
	pr=$(paste <(grep "^native -b $rate " "$work/rows.tsv" | cut -f4) <(grep "^iperf3 -b $rate " "$work/rows.tsv" | cut -f4) | awk '$2 > 0 {print $1 / $2}' | median)
	awk -v r="$rate" -v a="$n" -v b="$i" -v pr="$pr" 'BEGIN {printf "  -b %s: jitter native %.4f ms, iperf3 %.4f ms: %.2f (median of the rounds\047 ratios %s)\n", r, a, b, (b > 0 ? a/b : 0), pr}'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
