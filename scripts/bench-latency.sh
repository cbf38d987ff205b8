#!/usr/bin/env bash
# bench-latency.sh: the native ping-pong against sockperf, and native UDP
# against iperf3 -u, on the same lab path, same placement, interleaved.
#
#   sudo flock /tmp/linerate-lab.lock scripts/bench-latency.sh [ROUNDS] [SECONDS]
#
# In a lab 'latbench' (healthy scenario; made and removed here), ROUNDS
# rounds (default 3) of, back to back:
#   - TCP ping-pong, 64-byte messages at 10000/s: linerate bench --latency,
#     then --engine sockperf (sockperf ping-pong --tcp --full-rtt: round
#     trips both), with both ends on CPU 0 (what the tools add, without
#     the hypervisor's cross-CPU wake-ups) and across CPUs 0 and 1;
#   - UDP at 1 Gbit/s, 1460-byte datagrams: linerate bench --udp -b 1G,
#     then iperf3 -u -b 1G -l 1460;
#   - UDP at the highest rate the lab carries (-b 0, unlimited): packets
#     per second sent and received, linerate against iperf3 -u -b 0.
# UDP runs put the client on CPU 0, the server on CPU 1, for both tools.
# It prints one table row per run, the medians and the median of each
# round's ratio native / reference (a round's pair ran back to back, so
# its ratio is the least touched by the machine's drift). KEEP=DIR
# keeps the runs' linerate.bench/v1 documents there.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}

if [ "$(id -u)" != 0 ]; then
	echo "bench-latency.sh: needs root (network namespaces): run it with sudo" >&2
	exit 2
fi
for t in iperf3 sockperf jq; do
	command -v $t >/dev/null || { echo "bench-latency.sh: $t is not installed: apt-get install -y $t" >&2; exit 2; }
done

work=$(mktemp -d)
lab=latbench
cleanup() { "$work/linerate" lab down --name $lab >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/linerate" ./cmd/linerate
lr="$work/linerate"
"$lr" lab up --name $lab >/dev/null
a="ip netns exec lr-$lab-a"
b="ip netns exec lr-$lab-b"

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(iperf3 --version | head -1); sockperf $(sockperf --version 2>&1 | head -1 | awk '{print $3}'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "lab $lab (healthy), client in lr-$lab-a, server in lr-$lab-b, $secs s per run, $rounds rounds"
echo

keep() { if [ -n "${KEEP:-}" ]; then cp "$1" "$KEEP/$2"; fi; }
native_lat() { "$lr" bench lab:$lab --latency --size 64 --rate 10000 -t "$secs" -A "$1" --no-store -J > "$work/n.json"; keep "$work/n.json" native-tcp-$1-r$r.json; }
sockperf_lat() { "$lr" bench lab:$lab --latency --engine sockperf --size 64 --rate 10000 -t "$secs" -A "$1" --no-store -J > "$work/s.json"; keep "$work/s.json" sockperf-tcp-$1-r$r.json; }
native_udp() { "$lr" bench lab:$lab --udp -b "$1" -l 1460 -t "$secs" -A 0,1 --no-store -J > "$work/nu.json"; keep "$work/nu.json" native-udp-$1-r$r.json; }
iperf3_udp() {
	$b iperf3 -s -1 -p 5299 -A 1 >/dev/null 2>&1 &
	local srv=$!
	sleep 0.5
	$a iperf3 -c 198.18.0.2 -p 5299 -u -b "$1" -l 1460 -t "$secs" -A 0 -J > "$work/iu.json" || true
	wait $srv || true
}
lat_row() { jq -r --arg t "$1" '.end.latency | [$t, .samples, .rtt_us.p50, .rtt_us.p99, .rtt_us.p99_9, .rate_per_s] | @tsv' "$2"; }

printf '%-26s %8s %10s %10s %10s %10s\n' "latency run (-A cl,srv)" samples "p50 µs" "p99 µs" "p99.9 µs" "rate/s"
: > "$work/lat.tsv"
for r in $(seq "$rounds"); do
	for pl in 0,0 0,1; do
		native_lat $pl; lat_row "native tcp $pl r$r" "$work/n.json" | tee -a "$work/lat.tsv"
		sockperf_lat $pl; lat_row "sockperf tcp $pl r$r" "$work/s.json" | tee -a "$work/lat.tsv"
	done
done | awk -F'\t' '{printf "%-26s %8d %10.1f %10.1f %10.1f %10.0f\n", $1, $2, $3, $4, $5, $6}'
echo

printf '%-22s %14s %12s %10s %10s %10s\n' "UDP run" "sent bit/s" "sent pps" "recv pps" "lost %" "jitter ms"
: > "$work/udp.tsv"
for r in $(seq "$rounds"); do
	for rate in 1G 0; do
		native_udp $rate
		jq -r --arg t "native -b $rate r$r" '.end.sum as $s | .end.udp as $u | .end.seconds as $w | [$t, $s.bits_per_second, $u.packets_per_second, ($u.received_packets / $w), $s.lost_percent, $s.jitter_ms] | @tsv' "$work/nu.json" | tee -a "$work/udp.tsv"
		iperf3_udp $rate
		jq -r --arg t "iperf3 -b $rate r$r" '.end.sum as $s | [$t, $s.bits_per_second, ($s.packets / $s.seconds), (($s.packets - $s.lost_packets) / $s.seconds), $s.lost_percent, $s.jitter_ms] | @tsv' "$work/iu.json" | tee -a "$work/udp.tsv"
	done
done | awk -F'\t' '{printf "%-22s %14.4g %12.0f %10.0f %10.3f %10.4f\n", $1, $2, $3, $4, $5, $6}'
echo

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
col() { grep "^$1" "$2" | cut -f"$3" | median; }
# pairratio PLACEMENT FIELD: the median over rounds of native / sockperf.
pairratio() {
	paste <(grep "^native tcp $1 " "$work/lat.tsv" | cut -f"$2") <(grep "^sockperf tcp $1 " "$work/lat.tsv" | cut -f"$2") |
		awk '{print $1 / $2}' | median
}
echo "medians over $rounds rounds (native / reference):"
for pl in 0,0 0,1; do
	for q in p50:3 p99:4; do
		f=${q#*:}
		n=$(col "native tcp $pl " "$work/lat.tsv" "$f"); s=$(col "sockperf tcp $pl " "$work/lat.tsv" "$f")
		awk -v q="${q%:*}" -v pl="$pl" -v a="$n" -v b="$s" -v pr="$(pairratio "$pl" "$f")" \
			'BEGIN {printf "  TCP round trip %s, -A %s: native %.1f µs, sockperf %.1f µs: %.2f (median of the rounds\047 ratios %.2f)\n", q, pl, a, b, a/b, pr}'
	done
done
nb=$(col "native -b 1G" "$work/udp.tsv" 2); ib=$(col "iperf3 -b 1G" "$work/udp.tsv" 2)
nl=$(col "native -b 1G" "$work/udp.tsv" 5); il=$(col "iperf3 -b 1G" "$work/udp.tsv" 5)
awk -v a="$nb" -v b="$ib" -v c="$nl" -v d="$il" 'BEGIN {printf "  UDP -b 1G: native %.4g bit/s (%.2f%% of the target, lost %.3f%%), iperf3 %.4g bit/s (lost %.3f%%): %.3f\n", a, a/1e7, c, b, d, a/b}'
np=$(col "native -b 0" "$work/udp.tsv" 3); ip=$(col "iperf3 -b 0" "$work/udp.tsv" 3)
nr=$(col "native -b 0" "$work/udp.tsv" 4); ir=$(col "iperf3 -b 0" "$work/udp.tsv" 4)
awk -v a="$np" -v b="$ip" -v c="$nr" -v d="$ir" 'BEGIN {printf "  UDP -b 0 (highest rate): sent pps native %.0f, iperf3 %.0f: %.2f; received pps native %.0f, iperf3 %.0f: %.2f\n", a, b, a/b, c, d, c/d}'
