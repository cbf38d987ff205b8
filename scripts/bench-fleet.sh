#!/bin/bash
# What one fleet test costs beyond its duration, and what a 64-host matrix
# therefore takes: in a lab of 3 hosts, an agent in h02 and N native
# bench runs of 1 s from h01, each stored in a results database as a
# fleet's tests are. Overhead = wall time of `linerate bench -t 1` - 1 s.
# It includes starting the linerate process in the lab host (measured
# apart with `linerate version`), which an in-process fleet runner does
# not pay: both are printed.
#
#   sudo flock /tmp/linerate-lab.lock scripts/bench-fleet.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/go-env.sh
n=${1:-10}
name=fbench
work=$(mktemp -d)
bin=$work/linerate
export LINERATE_STATE_DIR=$work/state
cleanup() {
  [ -n "${agent:-}" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null || true
  "$bin" lab down --name $name >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$bin" ./cmd/linerate
"$bin" lab up --name $name --hosts 3 >/dev/null
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
chmod 600 "$work/token"
"$bin" lab exec $name h02 -- "$bin" serve --bind 198.18.0.2 --token-file "$work/token" >"$work/agent.log" 2>&1 &
agent=$!
for _ in $(seq 50); do grep -q "Listening on" "$work/agent.log" && break; sleep 0.1; done

ms() { date +%s%N | cut -c1-13; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

exec_ms=()
for _ in $(seq "$n"); do
  t0=$(ms); "$bin" lab exec $name h01 -- "$bin" version >/dev/null; t1=$(ms)
  exec_ms+=($((t1 - t0)))
done
stored_ms=() nostore_ms=()
for _ in $(seq "$n"); do
  t0=$(ms)
  "$bin" lab exec $name h01 -- "$bin" bench 198.18.0.2 -t 1 --token-file "$work/token" --db "$work/results.db" --label fleet-bench --json >/dev/null
  t1=$(ms)
  "$bin" lab exec $name h01 -- "$bin" bench 198.18.0.2 -t 1 --token-file "$work/token" --no-store --json >/dev/null
  t2=$(ms)
  stored_ms+=($((t1 - t0 - 1000))) nostore_ms+=($((t2 - t1 - 1000)))
done
e=$(printf '%s\n' "${exec_ms[@]}" | median)
s=$(printf '%s\n' "${stored_ms[@]}" | median)
u=$(printf '%s\n' "${nostore_ms[@]}" | median)
echo "runs: $n   process start in a lab host (linerate version): median ${e} ms  [${exec_ms[*]}]"
echo "overhead of a stored 1 s test: median ${s} ms  [${stored_ms[*]}]"
echo "overhead of an unstored 1 s test: median ${u} ms  [${nostore_ms[*]}]"
o=$(awk -v s="$s" -v e="$e" 'BEGIN {print (s - e) / 1000}')
awk -v o="$o" 'BEGIN {
  h = 64; t = 10; tests = h * (h - 1); legs = 2 * (h - 1)
  printf "64 hosts, 10 s tests, %.3f s overhead each (stored test minus process start):\n", o
  printf "  serial:   %d tests x %.3f s = %.0f s (%.2f h)\n", tests, t + o, tests * (t + o), tests * (t + o) / 3600
  printf "  parallel: %d legs  x %.3f s = %.0f s (%.1f min)\n", legs, t + o, legs * (t + o), legs * (t + o) / 60
}'
