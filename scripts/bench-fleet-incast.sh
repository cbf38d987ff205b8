#!/bin/bash
# Fan-in in a lab of K hosts: `linerate fleet run --pattern incast:hK`
# (every other host sends to the last at once) against h01 → hK alone (a
# pair run of the two), interleaved, ROUNDS times: what the receiver took
# from K-1 senders together as a ratio of what it took from one, the
# fairness across the senders (Jain's index, the smallest share of the
# fair share), their retransmits and the receiver's drops. PORT shapes the
# switch port toward hK (tbf: the one link every sender shares, as a top
# of rack port toward a storage server) with a queue of QUEUE (tbf's
# latency: 50ms a deep buffer, 2ms a shallow one); "" leaves the lab
# unshaped, where the machine's CPUs bind.
#
#   sudo scripts/bench-fleet-incast.sh K [SECONDS] [PORT] [ROUNDS] [QUEUE]
#
# LINERATE_BIN names a linerate binary built already (else it is built).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/go-env.sh
k=${1:?hosts}
t=${2:-3}
port=${3:-}
rounds=${4:-3}
queue=${5:-50ms}
name=finc$k
work=$(mktemp -d)
bin=$work/linerate
export LINERATE_STATE_DIR=$work/state
cleanup() {
  "$bin" lab down --name "$name" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ -n "${LINERATE_BIN:-}" ]; then cp "$LINERATE_BIN" "$bin"; else go build -o "$bin" ./cmd/linerate; fi
"$bin" lab up --name "$name" --hosts "$k" >/dev/null
recv=$(printf 'h%02d' "$k")
if [ -n "$port" ]; then
  ip netns exec "lr-$name-sw" tc qdisc replace dev "$recv" root tbf rate "$port" burst 256kb latency "$queue"
fi
echo "lab of $k hosts, incast of $((k - 1)) senders to $recv, ${t} s tests, switch port toward $recv: ${port:-unshaped}${port:+ (queue $queue)}; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$rounds"); do
  "$bin" fleet run --lab "$name" --pattern "incast:$recv" -t "$t" --json --db "$work/results.db" >"$work/incast-$i.json" 2>/dev/null
  "$bin" fleet run --lab "$name" --only "h01,$recv" -t "$t" --retests 0 --json --db "$work/results.db" >"$work/alone-$i.json" 2>/dev/null || true
done
python3 - "$work" "$rounds" "$recv" <<'EOF'
import json, statistics, sys
work, rounds, recv = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
print(f"{'round':>5}  {'incast sum':>10}  {'Jain':>5}  {'least share':>11}  {'retrans':>7}  {'h01 alone':>9}  {'sum/alone':>9}  receiver drops")
for i in range(1, rounds + 1):
    inc = json.load(open(f"{work}/incast-{i}.json"))["incast"]
    alone = json.load(open(f"{work}/alone-{i}.json"))
    one = next(p for p in alone["pairs"])
    g1 = one["a_to_b_gbps"] if one["a"] == "h01" else one["b_to_a_gbps"]
    shares = [s["fair_pct"] for s in inc["senders"] if s["fair_pct"] is not None]
    drops = ", ".join(f"{c} {v}" for c, v in sorted(inc["receiver_drops"]["deltas"].items()) if v) or "none grew"
    ratio = inc["sum_gbps"] / g1 if g1 else float("nan")
    rows.append((inc["sum_gbps"], inc["jain_index"], g1, ratio))
    print(f"{i:>5}  {inc['sum_gbps']:>10.3f}  {inc['jain_index']:>5.3f}  {min(shares):>10.0f}%  {inc['retransmits']:>7}  {g1:>9.3f}  {ratio:>9.2f}  {drops}")
med = lambda j: statistics.median(r[j] for r in rows)
print(f"{'median':>5}  {med(0):>10.3f}  {med(1):>5.3f}  {'':>11}  {'':>7}  {med(2):>9.3f}  {med(3):>9.2f}")
EOF
