#!/bin/bash
# Wall time of a whole fleet run in a lab of K hosts, serial or --concurrent:
# `linerate fleet run --lab` from agent start to agent stop, every test
# stored. Each host is shaped to RATE (default 200mbit) so that the tests
# are bound by tbf rather than by the machine's CPUs. Prints the tests
# run in sequence (tests, or legs with --concurrent; re-tests and probes
# included), the matrix's own wall time (from the linerate.fleet/v1
# document), the command's and the overhead per test in sequence beyond
# its duration.
#
#   sudo flock /tmp/linerate-lab.lock scripts/bench-fleet-matrix.sh K serial|parallel [SECONDS] [RATE]
#
# LINERATE_BIN names a linerate binary built already (else it is built);
# FLEET_ARGS adds options to fleet run ("--design sampled --partners 4").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/go-env.sh
k=${1:?hosts}
mode=${2:?serial or parallel}
t=${3:-2}
rate=${4:-200mbit}
name=fmat$k
work=$(mktemp -d)
bin=$work/linerate
export LINERATE_STATE_DIR=$work/state
cleanup() {
  "$bin" lab down --name "$name" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ -n "${LINERATE_BIN:-}" ]; then cp "$LINERATE_BIN" "$bin"; else go build -o "$bin" ./cmd/linerate; fi
"$bin" lab up --name "$name" --hosts "$k" --rate "$rate" >/dev/null
par=()
[ "$mode" = parallel ] && par=(--concurrent)
read -r -a extra <<<"${FLEET_ARGS:-}"
t0=$(date +%s%N)
code=0
"$bin" fleet run --lab "$name" -t "$t" "${par[@]}" "${extra[@]}" --json --db "$work/results.db" >"$work/fleet.json" || code=$?
t1=$(date +%s%N)
python3 - "$work/fleet.json" "$k" "$mode" "$t" "$code" "$(( (t1 - t0) / 1000000 ))" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
k, mode, t, code, cmd_ms = int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
retests = sum(len(r["retests_gbps"]) for r in doc["retests"])
seq = doc["tests"] if mode == "serial" else doc["legs"]
wall = doc["wall_s"]
print(f"{k} hosts {mode}, design {doc.get('design', 'all')}: {doc['tests']} tests ({retests} re-tests), {doc['rounds']} rounds, {seq} in sequence of {t:g} s; "
      f"matrix {wall:.1f} s, command {cmd_ms / 1000:.1f} s (exit {code}); overhead per test in sequence {(wall - seq * t) / seq * 1000:.0f} ms; "
      f"median {doc['median_gbps']} Gbit/s, outliers {len(doc['outliers'])}")
EOF
