#!/usr/bin/env bash
# bench-tune.sh: what `linerate tune` gains in the lab's small-buffers
# scenario, measured with iperf3 (a → b, one stream, 5 s).
#
#   sudo scripts/bench-tune.sh [ROUNDS]   (default 5)
#
# Each round measures b untuned, runs `linerate tune --iface lab0 --apply`
# in b, measures again, and reverts (`tune revert --last`), so untuned and
# tuned runs interleave and share the machine's moment. It prints each
# round and the medians, with the ratio tuned/untuned. The lab (name
# bt-tune) and the state directory are its own, removed at the end.
# Tests assert what tune changes, never a speed: the speed is here.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "bench-tune.sh: needs root (network namespaces): run it with sudo" >&2
	exit 2
fi
command -v iperf3 >/dev/null || { echo "bench-tune.sh: iperf3 is not installed: apt-get install -y iperf3" >&2; exit 2; }
rounds=${1:-5}
source scripts/go-env.sh

work=$(mktemp -d)
name=bt-tune
export LINERATE_STATE_DIR=$work/state NO_COLOR=1
lr=$work/linerate
cleanup() {
	"$lr" lab down --name "$name" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -o "$lr" ./cmd/linerate
"$lr" lab up --name "$name" --scenario small-buffers >/dev/null

# gbps prints a → b throughput in Gbit/s (receiver side) of one 5 s run.
gbps() {
	"$lr" lab exec "$name" b -- iperf3 -s -1 >/dev/null 2>&1 &
	local srv=$! out
	for try in $(seq 50); do
		out=$("$lr" lab exec "$name" a -- iperf3 -c 198.18.0.2 -t 5 -J 2>/dev/null || true)
		case "$out" in
		*'"error"'*"unable to connect"* | *'"error"'*refused*) [ "$try" -lt 50 ] && sleep 0.1 && continue ;;
		*'"error"'*) ;;
		*) break ;;
		esac
		kill "$srv" 2>/dev/null || true
		echo "bench-tune.sh: iperf3 a → b failed: $(grep '"error"' <<<"$out")" >&2
		exit 1
	done
	wait "$srv" || true
	awk -F: '/"sum_received"/ {r = 1} r && /"bits_per_second"/ {gsub(/[ ,]/, "", $2); printf "%.2f\n", $2 / 1e9; exit}' <<<"$out"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(iperf3 --version | head -1)"
echo "| round | untuned Gbit/s | tuned Gbit/s | tuned/untuned |"
echo "|---|---|---|---|"
: >"$work/untuned"
: >"$work/tuned"
for r in $(seq "$rounds"); do
	u=$(gbps)
	"$lr" lab exec "$name" b -- "$lr" tune --iface lab0 --apply >/dev/null
	t=$(gbps)
	"$lr" lab exec "$name" b -- "$lr" tune revert --last >/dev/null
	echo "$u" >>"$work/untuned"
	echo "$t" >>"$work/tuned"
	echo "| $r | $u | $t | $(awk -v a="$t" -v b="$u" 'BEGIN {printf "%.2f", a / b}') |"
done
mu=$(median <"$work/untuned")
mt=$(median <"$work/tuned")
echo "| median | $mu | $mt | $(awk -v a="$mt" -v b="$mu" 'BEGIN {printf "%.2f", a / b}') |"
