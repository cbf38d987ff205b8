#!/usr/bin/env bash
# bench-neper.sh: linerate against neper (google/neper), the kernel
# developers' own load generator, on the same lab path.
#
#   sudo NEPER_DIR=/path/to/neper scripts/bench-neper.sh [PAIRS [SECONDS]]
#   sudo NEPER_DIR=/path/to/neper scripts/bench-neper.sh --engine-level [benchengine flags, e.g. -pairs 3 -t 3s]
#
# NEPER_DIR is a directory holding a neper build (tcp_rr, tcp_crr and
# tcp_stream, as its Makefile makes them); this script builds no part of
# neper. In a lab (two network namespaces and a veth; made and removed
# here), PAIRS interleaved pairs (default 3) of SECONDS each (default 3),
# each order in turn, through the CLI as a user runs it:
#   - rr: linerate bench lab:neper --rr --flows 10 --threads 2 against
#     neper tcp_rr -F 10 -T 2 (transactions/s, 1-byte request and response);
#   - crr: linerate bench lab:neper --crr against neper tcp_crr (1 flow on
#     1 thread, a connection per transaction; transactions/s);
#   - stream: linerate bench lab:neper -P 100 --threads 2 against neper
#     tcp_stream -F 100 -T 2 (the receiver's Gbit/s).
# Placement: both tools run pinned the same way, as linerate places
# these tests by itself on this machine: linerate with -A CLIENT,SERVER
# (its thread i on the i-th CPU of each end's list), neper under taskset
# with those CPUs and --pin-cpu (-U: its thread i on the i-th allowed
# CPU). rr: both ends on CPUs 0-1 (a flow's two ends share a CPU); crr:
# both ends on CPU 0; stream: the senders on CPU 0, the receivers on CPU 1,
# and again on CPUs 0-1 at both ends (as neper --pin-cpu alone places it).
# NEPER_UNPINNED=1 leaves neper's threads to the scheduler (its default)
# instead. It prints a Markdown table: medians, ratios and every run, with
# the cost of both ends (user and system time of both processes: CPU µs per
# transaction, CPU s per Gbit).
#
# --engine-level runs the engine-level comparison instead (cmd/benchengine
# -mode neper: linerate through package agent, without the CLI).
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
for t in jq python3; do
	if ! command -v "$t" >/dev/null; then
		echo "bench-neper.sh: needs $t" >&2
		exit 2
	fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "neper: $NEPER_DIR ($("$NEPER_DIR/tcp_rr" --nolog --version 2>/dev/null | head -1 || echo 'version unknown'))"
echo

if [ "${1:-}" = --engine-level ]; then
	shift
	go build -o "$work/benchengine" ./cmd/benchengine
	"$work/benchengine" -mode neper -neper "$NEPER_DIR" -lab neper "$@"
	echo
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi

pairs=${1:-3}
secs=${2:-3}
go build -o "$work/linerate" ./cmd/linerate
lr="$work/linerate"
export LINERATE_STATE_DIR="$work/state"
"$lr" lab up --name neper >/dev/null
trap '"$lr" lab down --name neper >/dev/null; rm -rf "$work"' EXIT
nsa="lr-neper-a"
nsb="lr-neper-b"
addr=198.18.0.2
placement="both pinned alike: linerate -A CLIENT,SERVER; neper under taskset -c with those CPUs and --pin-cpu"
if [ "${NEPER_UNPINNED:-}" = 1 ]; then
	placement="linerate pinned (-A); neper's threads left to the scheduler (its default)"
fi

# linerate_run KIND ARGS…: one run through the CLI; prints "value cpu_us"
# (transactions/s or Gbit/s; CPU µs per transaction of both ends, or CPU s
# per Gbit for streams).
linerate_run() {
	local kind=$1
	shift
	local out="$work/lr.json"
	"$lr" bench lab:neper -t "$secs" --no-store --json "$@" >"$out" 2>"$work/lr.err" || { cat "$work/lr.err" >&2; return 1; }
	if [ "$kind" = stream ]; then
		jq -r '[.end.sum_received.bits_per_second/1e9, (.end.cpu.client_seconds+.end.cpu.server_seconds)/(.end.sum_received.bits_per_second/1e9*.end.seconds)] | @tsv' "$out"
	else
		jq -r '[.end.transactions.per_second, .end.transactions.cpu_us_per_transaction.client+.end.transactions.cpu_us_per_transaction.server] | @tsv' "$out"
	fi
}

# neper_key FILE KEY: KEY=value from neper's output.
neper_key() { sed -n "s/^$2=//p" "$1" | head -1; }

# pinned CPUS: the command prefix that pins neper's threads to CPUS, one
# thread a CPU in turn (none with NEPER_UNPINNED=1).
pinned() {
	if [ "${NEPER_UNPINNED:-}" = 1 ]; then
		echo env
	else
		echo "taskset -c $1"
	fi
}

# neper_run KIND PLACEMENT PROG ARGS…: one run of neper, server in host
# b, client in host a, pinned as PLACEMENT (CLIENT,SERVER); prints "value
# cpu" as linerate_run does.
neper_run() {
	local kind=$1 place=$2 prog=$3
	shift 3
	local pin=()
	[ "${NEPER_UNPINNED:-}" = 1 ] || pin=(-U)
	# shellcheck disable=SC2046 # pinned prints a command and its arguments
	ip netns exec $nsb $(pinned "${place#*,}") "$NEPER_DIR/$prog" --nolog -l "$secs" "${pin[@]}" "$@" >"$work/ns.out" 2>&1 &
	local srv=$!
	sleep 0.5
	# shellcheck disable=SC2046
	ip netns exec $nsa $(pinned "${place%,*}") "$NEPER_DIR/$prog" --nolog -c -H $addr -l "$secs" "${pin[@]}" "$@" >"$work/nc.out" 2>&1 || { cat "$work/nc.out" >&2; kill $srv; return 1; }
	wait $srv || true
	local cpu=0 f
	for f in "$work/nc.out" "$work/ns.out"; do
		cpu=$(python3 -c "print($cpu + $(neper_key "$f" utime_end) - $(neper_key "$f" utime_start) + $(neper_key "$f" stime_end) - $(neper_key "$f" stime_start))")
	done
	if [ "$kind" = stream ]; then
		# The receiver's figure (Mbit/s), from the server's output.
		python3 -c "g=$(neper_key "$work/ns.out" throughput)/1e3; print(f'{g}\t{$cpu/(g*$secs)}')"
	else
		python3 -c "n=$(neper_key "$work/nc.out" num_transactions); print(f'{$(neper_key "$work/nc.out" throughput)}\t{$cpu*1e6/n}')"
	fi
}

compare() {
	local what=$1 kind=$2 place=$3 lrargs=$4 prog=$5 nargs=$6
	local lv=() nv=() lc=() nc=() i
	for ((i = 0; i < pairs; i++)); do
		local first=lr
		((i % 2)) && first=neper
		for side in "$first" "$([ "$first" = lr ] && echo neper || echo lr)"; do
			local v
			# shellcheck disable=SC2086 # the argument lists are word lists
			if [ "$side" = lr ]; then v=$(linerate_run "$kind" -A "$place" $lrargs); else v=$(neper_run "$kind" "$place" "$prog" $nargs); fi
			if [ "$side" = lr ]; then lv+=("$(cut -f1 <<<"$v")"); lc+=("$(cut -f2 <<<"$v")"); else nv+=("$(cut -f1 <<<"$v")"); nc+=("$(cut -f2 <<<"$v")"); fi
		done
	done
	python3 - "$what" "$kind" "${lv[*]}" "${nv[*]}" "${lc[*]}" "${nc[*]}" <<'PY'
import statistics, sys
what, kind, lv, nv, lc, nc = sys.argv[1:]
f = lambda s: [float(x) for x in s.split()]
lv, nv, lc, nc = f(lv), f(nv), f(lc), f(nc)
ml, mn = statistics.median(lv), statistics.median(nv)
fmt = (lambda x: f"{x:.2f}") if kind == "stream" else (lambda x: f"{x:,.0f}".replace(",", " "))
cpu = "CPU s per Gbit" if kind == "stream" else "CPU µs per transaction"
print(f"| {what} | {fmt(ml)} | {fmt(mn)} | {ml/mn:.2f} | {', '.join(fmt(x) for x in lv)} | {', '.join(fmt(x) for x in nv)} | {cpu}: {statistics.median(lc):.3g} vs {statistics.median(nc):.3g} |")
PY
}

echo "placement: $placement; $pairs pairs of $secs s, alternating which goes first"
echo
echo "| comparison | linerate (median) | neper (median) | ratio | linerate runs | neper runs | cost, both ends (medians) |"
echo "|---|---|---|---|---|---|---|"
compare "rr: --rr --flows 10 --threads 2 vs tcp_rr -F 10 -T 2, CPUs 0-1,0-1, transactions/s" rr 0-1,0-1 "--rr --flows 10 --threads 2" tcp_rr "-F 10 -T 2"
compare "crr: --crr vs tcp_crr (1 flow, 1 thread), CPUs 0,0, transactions/s" crr 0,0 "--crr" tcp_crr ""
compare "stream: -P 100 --threads 2 vs tcp_stream -F 100 -T 2, CPUs 0,1, receiver's Gbit/s" stream 0,1 "-P 100 --threads 2" tcp_stream "-F 100 -T 2"
compare "stream, as neper --pin-cpu places itself: CPUs 0-1,0-1, receiver's Gbit/s" stream 0-1,0-1 "-P 100 --threads 2" tcp_stream "-F 100 -T 2"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
